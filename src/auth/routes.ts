import formbody from '@fastify/formbody';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ValidationError } from '../domain/errors.ts';
import { requireUser } from '../http/route-principal.ts';
import { ErrorBody } from '../http/schemas.ts';
import { AccessToken, LoginBody, Me, RegisterBody, RegisteredUser } from './schemas.ts';
import type { AuthService } from './service.ts';

export function authRoutes(auth: AuthService): FastifyPluginAsyncTypebox {
  return async (app) => {
    // Login also takes the form OAuth2 password clients send; every other route takes JSON only (request-guard.ts).
    await app.register(formbody);

    app.post('/auth/register', {
      config: { auth: 'registration' },
      schema: { tags: ['auth'], body: RegisterBody, response: { 201: RegisteredUser, 409: ErrorBody } },
      handler: async (request, reply) => {
        const { email, password, tenant_name } = request.body;
        reply.code(201);
        return auth.register(email, password, tenant_name);
      },
    });

    app.post('/auth/login', {
      config: { auth: 'public', forms: true },
      schema: { tags: ['auth'], body: LoginBody, response: { 200: AccessToken, 401: ErrorBody } },
      handler: async (request) => {
        const email = request.body.email ?? request.body.username;
        if (email === undefined) throw ValidationError.body('email', 'Field required', 'missing');
        return auth.login(email, request.body.password);
      },
    });

    app.get('/auth/me', {
      config: { auth: 'user' },
      schema: { tags: ['auth'], security: [{ bearer: [] }], response: { 200: Me } },
      handler: async (request) => auth.me(requireUser(request)),
    });
  };
}

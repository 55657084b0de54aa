import cors from '@fastify/cors';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { analyticsRoutes } from './analytics/routes.ts';
import { authRoutes } from './auth/routes.ts';
import { setupRoutes } from './auth/setup-routes.ts';
import { DEV_FRONTEND_ORIGIN } from './config.ts';
import { folderRoutes } from './console/folder-routes.ts';
import { consoleRoutes } from './console/routes.ts';
import { feedRoutes } from './datasets/feed-routes.ts';
import { datasetRoutes } from './datasets/routes.ts';
import { datasetSearchRoutes } from './datasets/search-routes.ts';
import { selectionRoutes } from './datasets/selection-routes.ts';
import { endpointRoutes } from './endpoints/routes.ts';
import { typeRoutes } from './endpoints/types-routes.ts';
import { healthRoutes } from './health/routes.ts';
import { clientIp } from './http/client.ts';
import { registerErrorHandler } from './http/error-handler.ts';
import { publishingRoutes } from './publishing/routes.ts';
import './http/fastify-types.ts';
import { storageRoutes } from './datasets/storage-routes.ts';
import { registerJsonBodyParser } from './http/json-body.ts';
import { QuietRequestLog } from './http/request-log.ts';
import { validatorCompiler } from './http/validation.ts';
import { marketplaceRoutes } from './marketplaces/routes.ts';
import { metricsRoutes } from './metrics/routes.ts';
import { modelRoutes } from './models/routes.ts';
import { serverModelRoutes } from './models/server-models-routes.ts';
import { walletRoutes } from './payments/routes.ts';
import { accessCheckRoutes } from './policies/access-check-routes.ts';
import { policyRoutes, rootPolicyRoutes } from './policies/routes.ts';
import { marketplaceStatusRoutes } from './publishing/marketplace-status.ts';
import { publicUrlRoutes } from './publishing/public-url-routes.ts';
import { queryRoutes } from './query/routes.ts';
import type { Services } from './services.ts';
import { tenantRoutes } from './tenants/routes.ts';
import { tunnelRoutes } from './tunnel/routes.ts';
import { VERSION } from './version.ts';

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** Builds the whole HTTP application on the given services; nothing listens here (see server.ts). */
export async function buildApp(services: Services): Promise<FastifyInstance> {
  const { config } = services;
  const app = Fastify({
    loggerInstance: services.log as FastifyBaseLogger,
    routerOptions: { ignoreTrailingSlash: true },
    bodyLimit: 1024 * 1024,
    // Log lines carry a request id: the caller's X-Request-Id when it is sane, else a fresh one.
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : crypto.randomUUID();
    },
    trustProxy: false,
    logController: new QuietRequestLog(),
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  registerErrorHandler(app);
  registerJsonBodyParser(app);
  app.decorateRequest('principal', null);

  await app.register(cors, {
    origin: [DEV_FRONTEND_ORIGIN, ...config.corsOrigins],
    methods: ['GET', 'POST', 'PATCH', 'DELETE', 'OPTIONS'],
    allowedHeaders: ['Content-Type', 'Authorization', 'X-Tenant-Name', 'X-Payment'],
    // A browser client reads the MPP challenge of a 402 (API-CONTRACT 10.3).
    exposedHeaders: ['WWW-Authenticate'],
    credentials: true,
  });
  await app.register(swagger, {
    openapi: {
      info: { title: 'knode: Knowledge Endpoint Service', version: VERSION },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    // The page runs only its own files (swagger-ui's inline scripts by hash), may not be framed, and loads
    // nothing from elsewhere (no validator badge); knode is served over plain http on a laptop, so no upgrade.
    staticCSP: true,
    transformStaticCSP: (header) =>
      header
        .replace("frame-ancestors 'self'", "frame-ancestors 'none'")
        .replace(' validator.swagger.io', '')
        .replaceAll(' https:', '')
        .replace(/ ?upgrade-insecure-requests;/, ''),
  });

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    // The documentation's pages and files (its static files skip swagger-ui's own hooks) are never framed.
    if (request.routeOptions.url?.startsWith('/docs')) {
      reply.header('x-frame-options', 'DENY');
      reply.header('referrer-policy', 'no-referrer');
      reply.header('x-content-type-options', 'nosniff');
    }
    const config = request.routeOptions.config;
    await services.requestGuard.check(request);
    // An address that failed too often waits, on every route (a query with a guessed token too).
    await services.failedAuth.check(request);
    request.principal = await services.guard.authenticate(request, config.auth ?? 'public');
    if (config.counted !== false) await services.limits.checkRequest(request.principal, clientIp(request));
  });
  // Every 401 counts against the client's address, wherever it came from (the guard, a wrong password).
  app.addHook('onResponse', async (request, reply) => {
    await services.failedAuth.record(request, reply.statusCode);
    // By route pattern, not URL: one series per route, whatever ids and slugs are asked for.
    services.metrics.httpRequest(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode);
  });

  await app.register(
    async (api) => {
      await api.register(healthRoutes);
      await api.register(authRoutes(services.auth));
      await api.register(tenantRoutes(services.tenants));
      await api.register(datasetRoutes(services.datasets));
      await api.register(feedRoutes(services.datasets));
      await api.register(selectionRoutes(services.selections));
      await api.register(modelRoutes(services.models, services.modelRunner));
      await api.register(endpointRoutes(services.endpoints));
      await api.register(publishingRoutes(services.publishing));
      await api.register(policyRoutes(services.policies));
      await api.register(marketplaceRoutes(services.marketplaces));
      await api.register(marketplaceStatusRoutes(services.marketplaceStatus));
      await api.register(publicUrlRoutes(services.publicUrl));
      await api.register(tunnelRoutes(services.tunnels));
      await api.register(queryRoutes(services.query, services.usage));
      await api.register(analyticsRoutes(services.analytics));
      await api.register(walletRoutes(services.wallets, services.tenants));
      // What the console needs besides the resources (src/console/, web/).
      await api.register(setupRoutes(config, services.auth));
      await api.register(typeRoutes());
      await api.register(datasetSearchRoutes(services.datasetSearch));
      await api.register(serverModelRoutes(services.outbound));
      await api.register(accessCheckRoutes());
      await api.register(folderRoutes(services.ingestionRoots));
      await api.register(storageRoutes(services.storage));
    },
    { prefix: '/api/v1' },
  );
  await app.register(rootPolicyRoutes(services.policies));
  await app.register(metricsRoutes(services.metrics));
  await app.register(consoleRoutes());
  return app;
}

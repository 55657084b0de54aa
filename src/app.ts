import cors from '@fastify/cors';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyPluginAsync } from 'fastify';
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
import { cachedSerializerFactory } from './http/serializer-cache.ts';
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

/**
 * Gives one of knode's plugins the name fastify-plugin would: without one, fastify looks for the plugin
 * among the exports of every module loaded (require.cache) on each registration, about 0.1 s of CPU for
 * an app's thirty (the tests build a hundred apps and more).
 */
function named<Plugin extends FastifyPluginAsync>(name: string, plugin: Plugin): Plugin {
  Object.defineProperty(plugin, Symbol.for('fastify.display-name'), { value: name, configurable: true });
  return plugin;
}

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
    schemaController: { compilersFactory: { buildSerializer: cachedSerializerFactory } },
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
  // Every 401 counts against the client's address, wherever it came from (the guard, a wrong password), and
  // before the answer leaves: counted after it (onResponse), a client's next attempt could be checked while the
  // count was still on its way to PostgreSQL, and sequential guesses got past the limit in cluster mode.
  app.addHook('onSend', async (request, reply, payload) => {
    await services.failedAuth.record(request, reply.statusCode);
    return payload;
  });
  app.addHook('onResponse', async (request, reply) => {
    // By route pattern, not URL: one series per route, whatever ids and slugs are asked for.
    services.metrics.httpRequest(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode);
  });

  // Registered under /api/v1 in this order.
  const apiRoutes: Record<string, FastifyPluginAsync> = {
    health: healthRoutes,
    auth: authRoutes(services.auth),
    tenants: tenantRoutes(services.tenants),
    datasets: datasetRoutes(services.datasets),
    feeds: feedRoutes(services.datasets),
    selections: selectionRoutes(services.selections),
    models: modelRoutes(services.models, services.modelRunner),
    endpoints: endpointRoutes(services.endpoints),
    publishing: publishingRoutes(services.publishing),
    policies: policyRoutes(services.policies),
    marketplaces: marketplaceRoutes(services.marketplaces),
    'marketplace-status': marketplaceStatusRoutes(services.marketplaceStatus),
    'public-url': publicUrlRoutes(services.publicUrl),
    tunnel: tunnelRoutes(services.tunnels),
    query: queryRoutes(services.query, services.usage),
    analytics: analyticsRoutes(services.analytics),
    wallet: walletRoutes(services.wallets, services.tenants),
    // What the console needs besides the resources (src/console/, web/).
    setup: setupRoutes(config, services.auth),
    types: typeRoutes(),
    'dataset-search': datasetSearchRoutes(services.datasetSearch),
    'server-models': serverModelRoutes(services.outbound),
    'access-check': accessCheckRoutes(),
    folders: folderRoutes(services.ingestionRoots),
    storage: storageRoutes(services.storage),
  };
  await app.register(
    named('knode-api', async (api) => {
      for (const [name, routes] of Object.entries(apiRoutes)) await api.register(named(`knode-${name}-routes`, routes));
    }),
    { prefix: '/api/v1' },
  );
  await app.register(named('knode-root-policy-routes', rootPolicyRoutes(services.policies)));
  await app.register(named('knode-metrics-routes', metricsRoutes(services.metrics)));
  await app.register(named('knode-console-routes', consoleRoutes()));
  return app;
}

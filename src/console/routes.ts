import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { NotFoundError } from '../domain/errors.ts';
import { type ConsoleAssets, consoleAssets, type ServedFile } from './served-files.ts';

/**
 * The console: its pages (index.html at `/` and at every address the console's router knows, so a reload
 * or a bookmark works) and its files under `/console/`. Same origin as the API, so the request guard lets
 * its JSON requests through with no CORS. `/docs` and `/api/v1` are untouched; `/policies/` stays the
 * API's (the console edits policies inside an endpoint's page).
 */

/** The console router's pages (web/app.tsx); anything else stays a 404. */
export const CONSOLE_PAGES = [
  '/',
  '/login',
  '/setup',
  '/datasets',
  '/datasets/*',
  '/models',
  '/models/*',
  '/endpoints',
  '/endpoints/*',
  '/analytics',
  '/settings',
];

/**
 * What the page may load: only its own files and API; no inline script, no frame, no other origin. Styles
 * set from script (element.style) are not inline styles in CSP's sense.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const IMMUTABLE = 'public, max-age=31536000, immutable';

export function consoleRoutes(assets: () => Promise<ConsoleAssets> = consoleAssets): FastifyPluginAsync {
  return async (app) => {
    // Not counted against the general API limits: a page load is three files, a reload three more.
    const config = { auth: 'public' as const, counted: false };
    const schema = { hide: true };

    const page = async (request: FastifyRequest, reply: FastifyReply) => {
      const { index } = await assets();
      reply.header('content-security-policy', CONTENT_SECURITY_POLICY);
      reply.header('x-frame-options', 'DENY');
      reply.header('referrer-policy', 'no-referrer');
      return send(request, reply, index, 'no-cache');
    };
    for (const url of CONSOLE_PAGES) app.get(url, { config, schema }, page);

    app.get<{ Params: { file: string } }>('/console/:file', { config, schema }, async (request, reply) => {
      const file = (await assets()).file(request.params.file);
      if (!file) throw new NotFoundError(`No console file '${request.params.file}'`);
      return send(request, reply, file, IMMUTABLE);
    });

    // Built once the server listens, so the first visitor does not wait for the bundler (from source).
    app.addHook('onListen', async () => {
      assets().catch((error) => app.log.error({ err: error }, 'the console could not be built'));
    });
  };
}

/** The file in the best encoding the client accepts (brotli, gzip, none). */
function send(request: FastifyRequest, reply: FastifyReply, file: ServedFile, cacheControl: string): FastifyReply {
  reply.header('cache-control', cacheControl);
  reply.header('vary', 'accept-encoding');
  reply.header('etag', file.etag);
  reply.header('x-content-type-options', 'nosniff');
  reply.type(file.type);
  if (request.headers['if-none-match'] === file.etag) return reply.code(304).send();
  const accepted = acceptedEncodings(request.headers['accept-encoding']);
  if (accepted.has('br')) return reply.header('content-encoding', 'br').send(file.brotli);
  if (accepted.has('gzip')) return reply.header('content-encoding', 'gzip').send(file.gzip);
  return reply.send(file.identity);
}

function acceptedEncodings(header: string | undefined): Set<string> {
  const accepted = new Set<string>();
  for (const part of (header ?? '').split(',')) {
    const [name, ...parameters] = part.trim().toLowerCase().split(';');
    const refused = parameters.some((parameter) => /^\s*q=0(\.0*)?\s*$/.test(parameter));
    if (name && !refused) accepted.add(name);
  }
  return accepted;
}

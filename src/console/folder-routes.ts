import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { requirePrincipal } from '../http/route-principal.ts';
import { SUPPORTED_EXTENSIONS } from '../ingestion/parsers/file-types.ts';
import { FolderBrowser } from './folders.ts';
import { FolderListingView } from './schemas.ts';

const FolderQuery = Type.Object({
  path: Type.Optional(Type.String({ maxLength: 4096, description: 'A folder inside your ingestion roots; absent: the roots themselves' })),
});

/**
 * `GET /api/v1/folders`: the folders of the caller's tenant's ingestion roots, to pick a dataset's folder
 * or a GGUF file without typing a path. Tenant credentials, as creating a dataset needs.
 */
export function folderRoutes(roots: { of(tenantId: string): Promise<string[]> }): FastifyPluginAsyncTypebox {
  const browser = new FolderBrowser({ roots: (tenantId) => roots.of(tenantId), documentExtensions: SUPPORTED_EXTENSIONS });
  return async (app) => {
    app.get('/folders', {
      config: { auth: 'tenant' },
      schema: {
        tags: ['console'],
        summary: "Folders inside the tenant's ingestion roots, with counts of documents and .gguf files",
        querystring: FolderQuery,
        response: { 200: FolderListingView },
      },
      handler: async (request) => browser.list(requirePrincipal(request).tenant.id, request.query.path),
    });
  };
}

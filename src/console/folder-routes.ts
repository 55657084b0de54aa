import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { requirePrincipal } from '../http/principal.ts';
import { SUPPORTED_EXTENSIONS } from '../ingestion/parsers/file-types.ts';
import { FolderBrowser } from './folders.ts';

const FolderEntryView = Type.Object({
  name: Type.String(),
  path: Type.String(),
  documents: Type.Integer(),
  models: Type.Integer(),
  complete: Type.Boolean(),
});

const FileEntryView = Type.Object({
  name: Type.String(),
  path: Type.String(),
  size: Type.Integer(),
  kind: Type.Enum(['document', 'model']),
});

export const FolderListingView = Type.Object({
  path: Type.Union([Type.String(), Type.Null()]),
  parent: Type.Union([Type.String(), Type.Null()]),
  folders: Type.Array(FolderEntryView),
  files: Type.Array(FileEntryView),
  truncated: Type.Boolean(),
});

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

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { requirePrincipal } from '../http/route-principal.ts';
import { IdParams } from '../http/schemas.ts';
import { SelectionBody, SelectionEntryView } from './selection-schemas.ts';
import type { DatasetSelectionService } from './selection-service.ts';

/**
 * A `local_file` dataset's selection of files and folders (API-CONTRACT 4, "Selections"): listed with each
 * entry's progress, added to and removed from; every answer is the selection as it is afterwards.
 */
export function selectionRoutes(selections: DatasetSelectionService): FastifyPluginAsyncTypebox {
  return async (app) => {
    const common = { config: { auth: 'tenant' as const } };
    const tags = ['datasets'];
    const response = { 200: Type.Array(SelectionEntryView) };

    app.get('/datasets/:id/selection', {
      ...common,
      schema: { tags, params: IdParams, response },
      handler: async (request) => selections.list(requirePrincipal(request).tenant, request.params.id),
    });

    app.post('/datasets/:id/selection', {
      ...common,
      schema: { tags, params: IdParams, body: SelectionBody, response },
      handler: async (request) => selections.add(requirePrincipal(request).tenant, request.params.id, request.body.paths),
    });

    app.delete('/datasets/:id/selection', {
      ...common,
      schema: { tags, params: IdParams, body: SelectionBody, response },
      handler: async (request) => selections.remove(requirePrincipal(request).tenant, request.params.id, request.body.paths),
    });
  };
}

import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { CONFIGURATION_TYPES, type ConfigurationKind } from './configuration-types.ts';
import { TypesView } from './schemas.ts';

const KINDS = Object.keys(CONFIGURATION_TYPES) as ConfigurationKind[];

const TypesQuery = Type.Object({ kind: Type.Optional(Type.Enum(KINDS)) });

type ConfigurationSchema = { description?: string } & Record<string, unknown>;

/** Every type of a kind with its schema, as plain JSON (TypeBox's own markers are symbols, dropped here). */
function typesOf(kind: ConfigurationKind) {
  return Object.entries(CONFIGURATION_TYPES[kind] as unknown as Record<string, ConfigurationSchema>).map(([type, schema]) => ({
    type,
    description: schema.description ?? '',
    configuration_schema: JSON.parse(JSON.stringify(schema)) as Record<string, unknown>,
  }));
}

/**
 * `GET /api/v1/types`: the dataset, model and policy types and the JSON Schema of their `configuration`,
 * from the registry the API checks configurations with (configuration-types.ts). The console builds its
 * forms from it, so a new type needs no new form code.
 */
export function typeRoutes(): FastifyPluginAsyncTypebox {
  const all = Object.fromEntries(KINDS.map((kind) => [kind, typesOf(kind)]));
  return async (app) => {
    app.get('/types', {
      config: { auth: 'tenant' },
      schema: {
        tags: ['types'],
        summary: 'Dataset, model and policy types with the JSON Schema of their configuration',
        querystring: TypesQuery,
        response: { 200: TypesView },
      },
      handler: async (request) => {
        const { kind } = request.query;
        return kind === undefined ? all : { [kind]: all[kind] ?? [] };
      },
    });
  };
}

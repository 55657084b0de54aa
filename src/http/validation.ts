import type { FastifySchemaCompiler } from 'fastify';
import { makeAjv } from '../util/json-schema.ts';

// JSON bodies are taken as sent: "5" is not a number and "true" is not a boolean. Query strings and
// path parameters are text by nature, so there types are coerced ("?limit=10" is the number 10).
// Their failures become 422 bodies through util/json-schema.ts (error-handler.ts), as configurations' do.
const bodyAjv = makeAjv({ coerceTypes: false });
const textAjv = makeAjv({ coerceTypes: 'array' });

export const validatorCompiler: FastifySchemaCompiler<object> = ({ schema, httpPart }) =>
  (httpPart === 'body' ? bodyAjv : textAjv).compile(schema);

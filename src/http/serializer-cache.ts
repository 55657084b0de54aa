/**
 * Fastify's own response serializers (fast-json-stringify, through fastify's default
 * @fastify/fast-json-stringify-compiler), compiled once per schema in a process instead of once per route of
 * every app. Most route schemas are module constants (TypeBox objects), shared by every route that answers
 * with them (ErrorBody) and by every app the process builds (each test file builds many); the lists a route
 * builds as it registers (Type.Array of a constant) are new objects each time, found again by their JSON.
 * Compiling them was most of the cost of building an app. A serializer depends only on its schema's JSON
 * and the options, never on the route, so a cached one writes the same bytes.
 */
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';

type SerializerFactory = ReturnType<typeof SerializerSelector>;
type Serializer = ReturnType<ReturnType<SerializerFactory>>;

const defaultFactory = SerializerSelector();
const bySchema = new WeakMap<object, Serializer>();
const byJson = new Map<string, Serializer>();

/** The schema's JSON, or undefined for one JSON cannot write (a cycle): that one is compiled each time. */
function jsonOf(schema: object): string | undefined {
  try {
    return JSON.stringify(schema);
  } catch {
    return undefined;
  }
}

/** For `schemaController.compilersFactory.buildSerializer`: fastify's default, with the cache in front. */
export const cachedSerializerFactory: SerializerFactory = (externalSchemas, options) => {
  const compile = defaultFactory(externalSchemas, options);
  // Shared schemas (addSchema) or serializer options make a serializer depend on more than its schema: no cache then.
  const cacheable = options === undefined && (externalSchemas === undefined || Object.keys(externalSchemas as object).length === 0);
  if (!cacheable) return compile;
  return (route) => {
    const { schema } = route;
    if (typeof schema !== 'object' || schema === null) return compile(route);
    let serializer = bySchema.get(schema);
    if (serializer) return serializer;
    const json = jsonOf(schema);
    if (json === undefined) return compile(route);
    serializer = byJson.get(json) ?? compile(route);
    byJson.set(json, serializer);
    bySchema.set(schema, serializer);
    return serializer;
  };
};

/**
 * Fastify's own response serializers (fast-json-stringify, through fastify's default
 * @fastify/fast-json-stringify-compiler), compiled once per schema object in a process instead of once per
 * route of every app. The route schemas are module constants (TypeBox objects), shared by every route that
 * answers with them (ErrorBody) and by every app the process builds (each test file builds many): compiling
 * them was most of the cost of building an app. A serializer depends only on its schema and the options,
 * never on the route, so a cached one writes the same bytes.
 */
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';

type SerializerFactory = ReturnType<typeof SerializerSelector>;
type Serializer = ReturnType<ReturnType<SerializerFactory>>;

const defaultFactory = SerializerSelector();
const compiled = new WeakMap<object, Serializer>();

/** For `schemaController.compilersFactory.buildSerializer`: fastify's default, with the cache in front. */
export const cachedSerializerFactory: SerializerFactory = (externalSchemas, options) => {
  const compile = defaultFactory(externalSchemas, options);
  // Shared schemas (addSchema) or serializer options make a serializer depend on more than its schema: no cache then.
  const cacheable = options === undefined && (externalSchemas === undefined || Object.keys(externalSchemas as object).length === 0);
  if (!cacheable) return compile;
  return (route) => {
    const { schema } = route;
    if (typeof schema !== 'object' || schema === null) return compile(route);
    let serializer = compiled.get(schema);
    if (!serializer) {
      serializer = compile(route);
      compiled.set(schema, serializer);
    }
    return serializer;
  };
};

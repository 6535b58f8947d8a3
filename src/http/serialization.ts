import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';

type BuildSerializer = ReturnType<typeof SerializerSelector>;

/**
 * Fastify's own response serializers, compiled once per distinct schema rather than once per route, status and
 * media type: every operation shares the error body, and the plural aliases share everything with the singular
 * paths. Compiling them all again took a large part of the start-up time.
 */
export const buildSharedSerializer: BuildSerializer = (externalSchemas, options) => {
  const compile = SerializerSelector()(externalSchemas, options);
  const compiled = new Map<string, ReturnType<typeof compile>>();
  return (route) => {
    const key = JSON.stringify(route.schema);
    let serializer = compiled.get(key);
    if (serializer === undefined) {
      serializer = compile(route);
      compiled.set(key, serializer);
    }
    return serializer;
  };
};

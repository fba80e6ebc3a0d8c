import ajvCompiler from "@fastify/ajv-compiler";
import serializerCompiler from "@fastify/fast-json-stringify-compiler";
import type {
  FastifySchemaCompiler,
  FastifySerializerCompiler,
  FastifyServerOptions,
} from "fastify";

type Compilers = NonNullable<
  NonNullable<FastifyServerOptions["schemaController"]>["compilersFactory"]
>;
type CompileValidator = FastifySchemaCompiler<unknown>;
type FastifyValidationResult = ReturnType<CompileValidator>;
type CompileSerializer = FastifySerializerCompiler<unknown>;

/**
 * Admin request schemas: no type coercion ("5" is not 5), unknown fields are an error rather than
 * silently dropped; the first error is reported, with the schema and value of the object at fault
 * (verbose: the refusal of an unknown field names the known field meant).
 */
export const ajvOptions = {
  customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false, verbose: true },
} as const;

// Fastify's pool of Ajv instances, one per set of options: apps built in one process (the tests
// build many) share an instance and the schemas it compiled, as a Fastify app's plugins do.
const validators = ajvCompiler();

/**
 * Fastify's own compilers (Ajv for requests, fast-json-stringify for answers), each schema
 * compiled the first time a request or an answer needs it rather than all of them when the app
 * starts: compiling every route's contract took three quarters of the time to build the app
 * (about 0.2 s of CPU), and a process mostly serves a few of its routes. test/http/schema-compilers.test.ts compiles every
 * route's schemas, so a schema that cannot compile still fails the tests, not a request.
 * Fastify counts these as custom compilers, so it would not lowercase the keys of a `headers`
 * schema for them (no route has one).
 */
export function lazySchemaCompilers(): Compilers {
  const serializers = serializerCompiler();
  // Fastify calls these with a route's schema, not with the schema alone as its types say.
  const buildValidator = (...args: Parameters<typeof validators>): CompileValidator => {
    const compile = validators(...args) as unknown as CompileValidator;
    return (route) => {
      let validate: FastifyValidationResult | undefined;
      // Fastify reads the errors of a failed validation from the function.
      const lazy: FastifyValidationResult = (data: unknown) => {
        validate ??= compile(route);
        const result = validate(data);
        lazy.errors = validate.errors;
        return result;
      };
      return lazy;
    };
  };
  const buildSerializer = (...args: Parameters<typeof serializers>): CompileSerializer => {
    const compile = serializers(...args) as CompileSerializer;
    return (route) => {
      let serialize: ((data: unknown) => string) | undefined;
      return (data) => (serialize ??= compile(route))(data);
    };
  };
  return {
    buildValidator: buildValidator as unknown as Compilers["buildValidator"],
    buildSerializer: buildSerializer as unknown as Compilers["buildSerializer"],
  };
}

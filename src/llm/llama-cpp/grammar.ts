/**
 * OpenAI's `response_format` as a llama.cpp grammar: JSON for `json_object` (and a schema-less
 * `json_schema`), the schema's own grammar for `json_schema`, none for text.
 */
import type { GbnfJsonObjectSchema, Llama, LlamaGrammar } from 'node-llama-cpp';
import { errorMessage } from '../../domain/errors.ts';
import { ModelError, type ResponseFormat } from '../provider.ts';

/** `modelName` is the file name, for the message when the schema cannot be followed. */
export async function grammarFor(llama: Llama, format: ResponseFormat | undefined, modelName: string): Promise<LlamaGrammar | undefined> {
  if (!format || format.type === 'text') return undefined;
  if (format.type === 'json_object') return llama.getGrammarFor('json');
  const schema = format.json_schema.schema;
  if (!schema) return llama.getGrammarFor('json');
  try {
    // The schema comes from the caller; node-llama-cpp checks what it supports and says what it does not.
    return await llama.createGrammarForJsonSchema(schema as GbnfJsonObjectSchema);
  } catch (error) {
    throw new ModelError(`Model '${modelName}' cannot follow this JSON schema: ${errorMessage(error)}`, { cause: error });
  }
}

import type { TypeInfo, Types } from '../views.ts';
import { useResource } from './hooks.ts';

/** `GET /api/v1/types`: every dataset, model and policy type with the JSON Schema of its configuration. */
export function useTypes(): ReturnType<typeof useResource<Types>> {
  return useResource<Types>('/types');
}

export function typeNamed(types: TypeInfo[] | undefined, name: string): TypeInfo | undefined {
  return types?.find((info) => info.type === name);
}

/** A type's name as people read it. */
export function typeLabel(type: string): string {
  const known: Record<string, string> = {
    local_file: 'Folder on this machine',
    rss: 'RSS or Atom feeds',
    openai: 'OpenAI-compatible server',
    llama_cpp: 'GGUF file on this machine',
    access: 'Access (who may ask)',
    rate_limit: 'Rate limit',
    accounting: 'Accounting',
    mpp: 'Price per query (MPP)',
    pii_filter: 'PII filter (personal data redacted)',
  };
  return known[type] ?? type.replace(/_/g, ' ');
}

/**
 * The file types the parsers understand (lower-case extensions, no dot): the one list that dataset
 * configurations are checked against and that parseFile dispatches on (index.ts keys its parsers by it).
 * Kept apart from the parsers so that checking a configuration does not load them.
 */
export const SUPPORTED_EXTENSIONS = Object.freeze(['pdf', 'docx', 'html', 'htm', 'txt', 'md', 'markdown', 'xlsx', 'csv', 'json'] as const);

export type SupportedExtension = (typeof SUPPORTED_EXTENSIONS)[number];

export function isSupportedExtension(value: string): value is SupportedExtension {
  return (SUPPORTED_EXTENSIONS as readonly string[]).includes(value);
}

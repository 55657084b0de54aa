import { realpathSync } from 'node:fs';
import { isAbsolute, relative, resolve, sep } from 'node:path';

/** Whether `path` is `root` itself or lies below it (both already resolved to real paths). */
export function isInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  // `..notes` is a folder inside the root; only `..` itself or `../...` climb out of it.
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

/** Whether `path` lies inside any of `roots` (all real paths). */
export function isInsideAny(roots: readonly string[], path: string): boolean {
  return roots.some((root) => isInside(root, path));
}

/** The real path (symbolic links followed), or undefined when the path does not exist or cannot be read. */
export function realPath(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

/**
 * Where an absolute `path` a tenant named really is, when it lies inside one of its `roots` (real paths):
 * `{real}`, or `{problem}` saying why not. A path outside the roots is refused before the file system is
 * asked, so the answer never tells whether something exists outside them; inside, symbolic links are
 * followed and must stay inside.
 */
export function placeInside(roots: readonly string[], path: string): { real: string } | { problem: string } {
  const outside = `Must be inside one of this tenant's folders: ${roots.join(', ')}`;
  if (!isAbsolute(path)) return { problem: 'Must be an absolute path' };
  if (roots.length === 0) {
    return { problem: 'This tenant has no folders yet: the operator grants folders with PATCH /api/v1/tenants/{name}' };
  }
  if (!isInsideAny(roots, resolve(path))) return { problem: outside };
  const real = realPath(path);
  if (real === undefined) return { problem: `'${path}' does not exist` };
  return isInsideAny(roots, real) ? { real } : { problem: outside };
}

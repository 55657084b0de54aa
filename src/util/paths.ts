import { realpathSync } from 'node:fs';
import { isAbsolute, relative, sep } from 'node:path';

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

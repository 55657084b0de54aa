import { join } from 'node:path';
import { extractEmbeddedFolder } from './assets.ts';

/**
 * The files of the API documentation page (/docs) inside the binary.
 *
 * @fastify/swagger-ui serves swagger-ui's scripts, styles and logo from its own static/ folder, which
 * it finds through __dirname (frozen by the bundler to the build machine's node_modules) and streams
 * with @fastify/static (streams cannot read files embedded in the binary). scripts/build.ts therefore
 * embeds that folder as `swagger-ui/` and patches the package to ask here instead; the folder is written
 * to the cache (assets.ts) the first time. Running from source never calls this.
 */

let folder: string | undefined;

export function swaggerUiStaticFolder(): string {
  // In the binary every module bundled with main.ts has /$bunfs/root as import.meta.dir.
  folder ??= extractEmbeddedFolder(join(import.meta.dir, 'swagger-ui'), 'swagger-ui');
  return folder;
}

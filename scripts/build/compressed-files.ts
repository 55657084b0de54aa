import { mkdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { BunPlugin } from 'bun';

/**
 * Embeds some files zstd-compressed: an import of one of them (`with { type: 'file' }`) gets the path
 * of `<name>.zst` in the binary instead, and src/runtime/assets.ts decompresses whatever ends in .zst
 * when it writes the file out, once per release. ONNX Runtime is 46 MB as is and 17 MB compressed, the
 * ngrok addon 11 MB and 4 MB: this keeps the binary under the 200 MB limit, for about 0.2 s of
 * decompression the first time each is needed. (The USE-lite weights are floats that barely compress;
 * they stay as they are.)
 */

export interface CompressedFile {
  /** Matches the import specifier exactly, e.g. /^sqlite-vec-linux-x64\/vec0\.so$/. */
  specifier: RegExp;
  /** The file in node_modules. */
  source: string;
}

/** Level 3: 17 MB in about half a second; level 19 saves 3 MB more and takes a minute. */
const ZSTD_LEVEL = 3;

export interface CompressedFiles {
  plugin: BunPlugin;
  /** Throws unless every file was imported (else it went into the binary uncompressed, or not at all). */
  checkApplied(): void;
}

export async function compressedFiles(files: readonly CompressedFile[], workDirectory: string): Promise<CompressedFiles> {
  mkdirSync(workDirectory, { recursive: true });
  const compressed = await Promise.all(
    files.map(async (file) => {
      const target = join(workDirectory, `${basename(file.source)}.zst`);
      await Bun.write(target, Bun.zstdCompressSync(await Bun.file(file.source).bytes(), { level: ZSTD_LEVEL }));
      return { specifier: file.specifier, target };
    }),
  );
  const used = new Set<string>();
  const plugin: BunPlugin = {
    name: 'knode-compressed-files',
    setup(build) {
      for (const { specifier, target } of compressed) {
        build.onResolve({ filter: specifier }, () => {
          used.add(target);
          return { path: target };
        });
      }
    },
  };
  const checkApplied = () => {
    const unused = compressed.filter(({ target }) => !used.has(target)).map(({ specifier }) => String(specifier));
    if (unused.length > 0) throw new Error(`no import matched ${unused.join(', ')}: update scripts/build.ts`);
  };
  return { plugin, checkApplied };
}

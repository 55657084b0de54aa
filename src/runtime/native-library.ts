import { extractEmbeddedFile } from './assets.ts';
import type { NATIVE_FILES } from './native-files.ts';

type NativeFiles = typeof NATIVE_FILES;

/** The names the libraries keep on disk: the loader and sqlite-vec's entry point go by them. */
const FILE_NAMES: Record<keyof NativeFiles, string> = {
  vec0: 'vec0.so',
  libonnxruntime: 'libonnxruntime.so.1',
  ngrokAddon: 'ngrok.linux-x64-gnu.node',
};

/**
 * A real path of one of the native libraries embedded in the binary, written to the cache on first use
 * (assets.ts). Only for the binary: native-files.ts is required here, not imported, so that running
 * from source never loads it.
 */
export function extractedNativeLibrary(key: keyof NativeFiles): string {
  const { NATIVE_FILES: files } = require('./native-files.ts') as { NATIVE_FILES: NativeFiles };
  return extractEmbeddedFile(files[key], FILE_NAMES[key]);
}

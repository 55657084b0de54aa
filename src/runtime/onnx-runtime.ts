import { dlopen } from 'bun:ffi';
import { isCompiled } from './compiled.ts';
import { extractedNativeLibrary } from './native-library.ts';

/**
 * Makes ONNX Runtime loadable before @huggingface/transformers is imported.
 *
 * onnxruntime-node's addon (onnxruntime_binding.node, embedded by the bundler and written out by Bun
 * when it is required) needs libonnxruntime.so.1, which it looks for beside itself ($ORIGIN): in the
 * binary that is a temporary folder of Bun's where the library is not. Once a library whose SONAME is
 * libonnxruntime.so.1 is loaded, the dynamic linker uses it for that dependency instead of searching,
 * so the embedded copy is written to the cache (assets.ts) and opened here first. From source the
 * addon finds the library in node_modules and this does nothing.
 */

let library: ReturnType<typeof dlopen> | undefined;

export function preloadOnnxRuntime(): void {
  if (!isCompiled || library) return;
  const path = extractedNativeLibrary('libonnxruntime');
  // Only being in the process matters; bun:ffi wants at least one symbol, so the C API's entry point
  // is named. The handle is kept, never closed: the addon uses the library while the process lives.
  library = dlopen(path, { OrtGetApiBase: { args: [], returns: 'ptr' } });
}

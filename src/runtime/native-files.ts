/**
 * The native libraries the binary carries inside itself. Each import is a path: in the binary an
 * embedded file under /$bunfs/ (see assets.ts for how it reaches the disk; the large ones are embedded
 * zstd-compressed, see scripts/build.ts), from source the file in node_modules. Only linux-x64 builds
 * exist, so these name the linux-x64 files.
 *
 * This module is loaded only inside the binary (see nativeFiles()), so running from source never
 * depends on these exact paths.
 */
import ngrokAddon from '@ngrok/ngrok-linux-x64-gnu/ngrok.linux-x64-gnu.node' with { type: 'file' };
import libonnxruntime from 'onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1' with { type: 'file' };
import vec0 from 'sqlite-vec-linux-x64/vec0.so' with { type: 'file' };

export const NATIVE_FILES = {
  /** sqlite-vec's loadable extension. */
  vec0,
  /** ONNX Runtime, which onnxruntime-node's addon (embedded by the bundler) links against. */
  libonnxruntime,
  /** The ngrok agent's addon (see ngrok-addon.ts). */
  ngrokAddon,
} as const;

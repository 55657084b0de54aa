import { extractedNativeLibrary } from './native-library.ts';

/**
 * The ngrok agent's native addon inside the binary. Left to the bundler, the 11 MB addon would be
 * embedded as is; scripts/build.ts embeds it zstd-compressed instead (4 MB) and patches @ngrok/ngrok's
 * loader to ask here: the addon is written to the cache (assets.ts) on first use and loaded from
 * there. Running from source never calls this.
 */
export function loadNgrokAddon(): unknown {
  const addon = { exports: {} as unknown };
  process.dlopen(addon, extractedNativeLibrary('ngrokAddon'));
  return addon.exports;
}

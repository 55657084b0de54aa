import { resolve } from 'node:path';
import type { BunPlugin } from 'bun';

/**
 * Some packages load parts of themselves in ways a bundle cannot follow; these build-time patches turn
 * each into a form that works in the binary. A patch that no longer finds its text fails the build, so
 * a package upgrade that changes the code is noticed at once rather than in a user's binary.
 */

/** Modules of ours that patched packages ask (absolute paths, so the bundler finds them from anywhere). */
const SWAGGER_UI_FILES = JSON.stringify(resolve(import.meta.dir, '../../src/runtime/swagger-ui.ts'));
const NGROK_ADDON = JSON.stringify(resolve(import.meta.dir, '../../src/runtime/ngrok-addon.ts'));

interface SourcePatch {
  /** Which file (its path in node_modules). */
  file: RegExp;
  /** Why: shown when the patch no longer applies. */
  reason: string;
  find: string;
  replace: string;
}

const PATCHES: SourcePatch[] = [
  {
    // transformers.js reaches onnxruntime-node through `createRequire(import.meta.url)`, a require the
    // bundler cannot see: in the binary it would look for node_modules beside /$bunfs/root/knode.
    file: /@huggingface[\\/]transformers[\\/]dist[\\/]transformers\.node\.mjs$/,
    reason: 'transformers.js must import onnxruntime-node so that the bundler embeds it',
    find: 'requireFromHere("onnxruntime-node")',
    replace: 'require("onnxruntime-node")',
  },
  {
    // onnxruntime-node picks its addon with a template string of the platform and architecture; the
    // binary is linux-x64 only, so name that one file and the bundler embeds it (Bun writes an embedded
    // .node file out and dlopens it when required; runtime/onnx-runtime.ts provides its library).
    file: /onnxruntime-node[\\/]dist[\\/]binding\.js$/,
    reason: "onnxruntime-node's addon must be required by a literal path to be embedded",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the text to find in the library is a template literal
    find: 'require(`../bin/napi-v6/${process.platform}/${process.arch}/onnxruntime_binding.node`)',
    replace: 'require("../bin/napi-v6/linux/x64/onnxruntime_binding.node")',
  },
  {
    // @fastify/swagger-ui reads its logo and serves its page's files from beside itself (__dirname is
    // the build machine's folder in a bundle): src/runtime/swagger-ui.ts gives a real folder instead.
    file: /@fastify[\\/]swagger-ui[\\/]index\.js$/,
    reason: "@fastify/swagger-ui's logo must be read from the files embedded in the binary",
    find: "path.join(__dirname, './static/logo.svg')",
    replace: `path.join(require(${SWAGGER_UI_FILES}).swaggerUiStaticFolder(), 'logo.svg')`,
  },
  {
    file: /@fastify[\\/]swagger-ui[\\/]lib[\\/]routes\.js$/,
    reason: "@fastify/swagger-ui's page files must be served from the files embedded in the binary",
    find: "path.join(__dirname, '..', 'static')",
    replace: `require(${SWAGGER_UI_FILES}).swaggerUiStaticFolder()`,
  },
  {
    // @ngrok/ngrok requires its linux-x64 addon package, which the bundler would embed uncompressed
    // (11 MB); src/runtime/ngrok-addon.ts loads the compressed copy instead (see scripts/build.ts).
    file: /@ngrok[\\/]ngrok[\\/]index\.js$/,
    reason: "@ngrok/ngrok's addon must be loaded from the compressed copy embedded in the binary",
    find: "require('@ngrok/ngrok-linux-x64-gnu')",
    replace: `require(${NGROK_ADDON}).loadNgrokAddon()`,
  },
];

/**
 * transformers.js imports sharp for image pipelines, and refuses to load when it is missing. knode only
 * embeds text, and sharp's native libvips (about 20 MB) would not load from inside the binary anyway,
 * so the binary gets a stand-in that is truthy, as transformers.js checks, and says why when called.
 */
const SHARP_STAND_IN = `
export default function sharp() {
  throw new Error('image processing (sharp) is not part of the knode binary: only text models are supported');
}
`;

export interface BundlePatches {
  plugin: BunPlugin;
  /** Throws unless every patch was applied: a file the bundle no longer includes is worth knowing about too. */
  checkApplied(): void;
}

export function bundlePatches(): BundlePatches {
  const applied = new Set<SourcePatch>();
  const plugin: BunPlugin = {
    name: 'knode-bundle-patches',
    setup(build) {
      build.onResolve({ filter: /^sharp$/ }, () => ({ path: 'sharp', namespace: 'knode-stand-in' }));
      build.onLoad({ filter: /.*/, namespace: 'knode-stand-in' }, () => ({ contents: SHARP_STAND_IN, loader: 'js' }));

      for (const patch of PATCHES) {
        build.onLoad({ filter: patch.file }, async (args) => {
          const source = await Bun.file(args.path).text();
          if (!source.includes(patch.find)) {
            throw new Error(
              `${args.path} no longer contains ${JSON.stringify(patch.find)} (${patch.reason}); update scripts/build/bundle-patches.ts`,
            );
          }
          applied.add(patch);
          return { contents: source.replace(patch.find, patch.replace), loader: 'js' };
        });
      }
    },
  };
  const checkApplied = () => {
    const missed = PATCHES.filter((patch) => !applied.has(patch));
    if (missed.length > 0) throw new Error(`bundle patches not applied: ${missed.map((patch) => patch.reason).join('; ')}`);
  };
  return { plugin, checkApplied };
}

/**
 * `npm run build`: dist/knode, the whole service in one linux-x64 executable, and dist/vendor/, the
 * local-model runtime that must stay a folder (see scripts/build/vendor.ts). Nothing is downloaded:
 * the Bun that runs this script is the runtime copied into the binary.
 *
 * Embedded in the binary: all code (the migrations are code), the parse and USE-lite worker entry
 * points (tfjs and ONNX Runtime), pdf.js' worker, sqlite-vec's vec0.so and ONNX Runtime
 * (src/runtime/native-files.ts; ONNX Runtime zstd-compressed, scripts/build/compressed-files.ts), the
 * USE-lite model and tfjs' .wasm files (src/embeddings/use-lite-files.ts), onnxruntime-node's addon, and
 * the files of the /docs page (src/runtime/swagger-ui.ts), and the console (web/, built here by
 * src/console/build.ts and served by src/console/served-files.ts). scripts/build/bundle-patches.ts makes the
 * packages that look for their own files at run time use the embedded ones.
 *
 * The USE-lite model is embedded once, as its TF.js files: the ONNX engine converts them on first use
 * (src/embeddings/use-lite-model.ts, about 0.1 s, then cached), since a converted copy would add 28 MB
 * of weights that barely compress and take the binary past 200 MB.
 *
 * Usage: bun scripts/build.ts [--out <folder>]   (default dist/)
 */
import { cpSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { buildConsole, writeConsoleFolder } from '../src/console/build.ts';
import { bundlePatches } from './build/bundle-patches.ts';
import { compressedFiles } from './build/compressed-files.ts';
import { buildVendor } from './build/vendor.ts';

const PROJECT_ROOT = resolve(import.meta.dir, '..');

/**
 * Worker threads are separate entry points: Bun bundles a worker only when it is listed. Their place
 * in the binary (relative to src/) is what src/runtime/compiled.ts#workerUrl resolves.
 */
const ENTRY_POINTS = [
  'src/main.ts',
  'src/ingestion/parse-worker.ts',
  'src/embeddings/use-lite-worker.ts',
  'src/embeddings/use-lite-onnx-worker.ts',
];

function outDirectory(): string {
  const at = process.argv.indexOf('--out');
  const given = at >= 0 ? process.argv[at + 1] : undefined;
  return resolve(PROJECT_ROOT, given ?? 'dist');
}

function megabytes(bytes: number): string {
  return `${(bytes / 1_000_000).toFixed(1)} MB`;
}

function folderSize(folder: string): number {
  let total = 0;
  for (const entry of new Bun.Glob('**/*').scanSync({ cwd: folder, onlyFiles: true, dot: true })) {
    total += statSync(join(folder, entry)).size;
  }
  return total;
}

async function buildBinary(outfile: string, workDirectory: string): Promise<void> {
  const patches = bundlePatches();
  // The large native files, embedded zstd-compressed (46 MB to 17 MB and 11 MB to 4 MB). The specifiers
  // are exactly those of src/runtime/native-files.ts, so no other import of these files is redirected.
  const compressed = await compressedFiles(
    [
      {
        specifier: /^onnxruntime-node\/bin\/napi-v6\/linux\/x64\/libonnxruntime\.so\.1$/,
        source: join(PROJECT_ROOT, 'node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1'),
      },
      {
        specifier: /^@ngrok\/ngrok-linux-x64-gnu\/ngrok\.linux-x64-gnu\.node$/,
        source: join(PROJECT_ROOT, 'node_modules/@ngrok/ngrok-linux-x64-gnu/ngrok.linux-x64-gnu.node'),
      },
    ],
    workDirectory,
  );
  // Embedded as the folder swagger-ui/ (compile.assets keeps a folder's last name), for src/runtime/swagger-ui.ts.
  const swaggerUi = join(workDirectory, 'swagger-ui');
  cpSync(join(PROJECT_ROOT, 'node_modules/@fastify/swagger-ui/static'), swaggerUi, { recursive: true });
  // The console (web/), built now and embedded as the folder console/, for src/console/served-files.ts.
  const consoleFolder = join(workDirectory, 'console');
  writeConsoleFolder(await buildConsole(), consoleFolder);
  const result = await Bun.build({
    entrypoints: ENTRY_POINTS.map((entry) => join(PROJECT_ROOT, entry)),
    root: join(PROJECT_ROOT, 'src'),
    compile: {
      target: 'bun-linux-x64',
      // This very Bun, so that nothing is fetched for the target.
      executablePath: process.execPath,
      outfile,
      // The binary is configured by SVC_* variables only: a bunfig.toml or .env that happens to be in
      // the folder it is started from must not change how it behaves.
      autoloadBunfig: false,
      autoloadDotenv: false,
      // Without this the binary reads no package.json at run time, so node-llama-cpp, imported from
      // vendor/, could not resolve its dependencies' entry points ("main", "exports").
      autoloadPackageJson: true,
      assets: [swaggerUi, consoleFolder],
    },
    // node-llama-cpp is loaded at run time from vendor/ beside the binary (src/runtime/vendor.ts). mppx
    // imports the MCP SDK (an optional peer it names) only when it serves MCP, which knode never asks of it.
    external: ['node-llama-cpp', '@modelcontextprotocol/sdk', '@modelcontextprotocol/sdk/*'],
    // Start-up: with bytecode the first healthy answer comes in about 0.45 s instead of 0.75 s (the
    // parsing moves to the build), for about 18 MB. Bytecode needs the ESM format for main.ts' top-level
    // await. No source map: its 6 MB would bring the binary close to the 200 MB limit.
    minify: true,
    bytecode: true,
    format: 'esm',
    sourcemap: 'none',
    plugins: [patches.plugin, compressed.plugin],
  });
  if (!result.success) {
    for (const log of result.logs) console.error(log);
    throw new Error('bun build --compile failed');
  }
  patches.checkApplied();
  compressed.checkApplied();
}

async function main(): Promise<void> {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(`the knode binary is built on linux-x64 (this is ${process.platform}-${process.arch})`);
  }
  const out = outDirectory();
  const binary = join(out, 'knode');
  const vendor = join(out, 'vendor');
  rmSync(binary, { force: true });
  rmSync(vendor, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });

  const started = performance.now();
  const work = join(out, '.build');
  try {
    await buildBinary(binary, work);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const packages = buildVendor(PROJECT_ROOT, vendor);
  const seconds = ((performance.now() - started) / 1000).toFixed(1);

  console.log(`built in ${seconds} s`);
  console.log(`${binary}  ${megabytes(statSync(binary).size)}`);
  console.log(`${vendor}/  ${megabytes(folderSize(vendor))} (node-llama-cpp and ${packages - 1} packages it needs)`);
}

await main();

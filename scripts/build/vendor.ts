import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';

/**
 * dist/vendor/node_modules: node-llama-cpp and everything it imports at run time, for the binary to
 * load from beside itself (src/runtime/vendor.ts). Packages are copied from node_modules at the same
 * relative paths, so Node's lookup (the package's own node_modules, then each parent's) finds the same
 * copies it finds here.
 *
 * Only what runs is shipped: of node-llama-cpp's optional platform packages only the linux-x64 CPU
 * build (CUDA and Vulkan are 600 MB nobody here can use), and not the llama.cpp source bundle it keeps
 * for building from source (knode never builds: `build: 'never'`), type declarations or source maps.
 */

const ROOT_PACKAGE = 'node-llama-cpp';
const PLATFORM_PACKAGE = '@node-llama-cpp/linux-x64';

/** Files no one needs at run time; the llama.cpp git bundle alone is 34 MB. */
function isShipped(path: string): boolean {
  const name = basename(path);
  if (name === 'gitRelease.bundle') return false;
  return !(name.endsWith('.d.ts') || name.endsWith('.d.cts') || name.endsWith('.d.mts') || name.endsWith('.map'));
}

interface PackageJson {
  name: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

function readPackage(folder: string): PackageJson {
  return JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8')) as PackageJson;
}

/** Node's lookup of a bare package name from inside a package folder. */
function findPackage(name: string, from: string, stopAt: string): string | undefined {
  for (let folder = from; ; folder = dirname(folder)) {
    const candidate = join(folder, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (folder === stopAt || dirname(folder) === folder) return undefined;
  }
}

/** The folders of node-llama-cpp and every package it needs, each once. */
export function runtimeClosure(projectRoot: string): string[] {
  const start = findPackage(ROOT_PACKAGE, projectRoot, projectRoot);
  if (!start) throw new Error(`${ROOT_PACKAGE} is not installed (run npm install)`);
  const found = new Set<string>();
  const visit = (folder: string) => {
    if (found.has(folder)) return;
    found.add(folder);
    const pkg = readPackage(folder);
    const optional = Object.keys(pkg.optionalDependencies ?? {});
    const needed = [
      ...Object.keys(pkg.dependencies ?? {}).filter((name) => !optional.includes(name)),
      ...optional.filter((name) => name === PLATFORM_PACKAGE),
      ...Object.keys(pkg.peerDependencies ?? {}).filter((name) => !pkg.peerDependenciesMeta?.[name]?.optional),
    ];
    for (const name of needed) {
      const dependency = findPackage(name, folder, projectRoot);
      if (!dependency) throw new Error(`${pkg.name} needs ${name}, which is not installed (run npm install)`);
      visit(dependency);
    }
  };
  visit(start);
  const platform = [...found].find((folder) => readPackage(folder).name === PLATFORM_PACKAGE);
  if (!platform) throw new Error(`${PLATFORM_PACKAGE} (the CPU binaries) is not installed (run npm install)`);
  return [...found].sort();
}

const VENDOR_README = `This folder belongs to the knode binary beside it: node-llama-cpp and its linux-x64 CPU
binaries, which run local GGUF models. knode loads them from here (vendor/ next to the binary);
without it everything but local models still works.
`;

/** Copies the closure into `<outDir>/node_modules`; returns how many packages were copied. */
export function buildVendor(projectRoot: string, outDir: string): number {
  const packages = runtimeClosure(projectRoot);
  const modules = join(projectRoot, 'node_modules');
  for (const folder of packages) {
    cpSync(folder, join(outDir, 'node_modules', relative(modules, folder)), {
      recursive: true,
      filter: (source) => isShipped(source) && !isNestedPackages(folder, source),
    });
  }
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, 'README.txt'), VENDOR_README);
  return packages.length;
}

/** A package's own node_modules holds other packages, copied (or not) in their own right. */
function isNestedPackages(packageFolder: string, source: string): boolean {
  return relative(packageFolder, source).split(/[\\/]/)[0] === 'node_modules';
}

import { existsSync } from 'node:fs';
import { join, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { binaryDirectory, isCompiled } from './compiled.ts';

/**
 * node-llama-cpp is the one part of knode that cannot live inside the binary: it finds its native
 * addon and llama.cpp libraries by walking its own package folders at run time. scripts/build.ts
 * therefore ships it as dist/vendor/node_modules (node-llama-cpp, its linux-x64 CPU binaries and the
 * packages they need), and the binary imports it from the vendor/ folder beside itself. From source it
 * is the ordinary package in node_modules.
 */

export type NodeLlamaCppModule = typeof import('node-llama-cpp');

/** Where the binary looks for its vendored packages. */
function vendorDirectory(): string {
  return join(binaryDirectory(), 'vendor');
}

export async function importNodeLlamaCpp(): Promise<NodeLlamaCppModule> {
  if (!isCompiled) return import('node-llama-cpp');
  const entry = join(vendorDirectory(), 'node_modules', 'node-llama-cpp', 'dist', 'index.js');
  if (!existsSync(entry)) {
    throw new Error(`${entry} is missing: keep the vendor/ folder that came with knode beside the knode binary`);
  }
  return (await import(pathToFileURL(entry).href)) as NodeLlamaCppModule;
}

/**
 * node-llama-cpp tests its native addon in a child process before loading it: it forks
 * process.execPath, which in the binary is knode itself, with a script of its own and an IPC channel.
 * When knode is started that way it runs the script (only a .js file under vendor/) instead of a
 * command, and answers true; main.ts then leaves the process to the script.
 */
export async function runForkedVendorScript(args: readonly string[]): Promise<boolean> {
  const script = args[0];
  if (!isCompiled || !script || !process.send || args.length !== 1) return false;
  const path = resolve(script);
  if (!path.startsWith(vendorDirectory() + sep) || !path.endsWith('.js')) return false;
  await import(pathToFileURL(path).href);
  return true;
}

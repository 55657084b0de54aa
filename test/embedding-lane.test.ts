/**
 * The embedding lane (src/ingestion/embedding-lane.ts) on its own, over an in-memory list of chunks: files
 * are embedded in the order they were added, a file added again replaces its older entry, and a forgotten
 * file is not embedded. (The ingestion tests run it against the real store.)
 */
import { expect, test } from 'bun:test';
import { EmbeddingLane, type LaneFile } from '../src/ingestion/embedding-lane.ts';

/** A lane over `chunks` (per path, their texts); resolves with what it wrote, once it is drained. */
function laneOver(chunks: Map<string, string[]>, windowTexts = 4) {
  const written: { path: string; generation: number; from: number; texts: string[] }[] = [];
  let drained: () => void = () => undefined;
  const done = new Promise<void>((resolve) => {
    drained = resolve;
  });
  const rowsOf = (path: string) => (chunks.get(path) ?? []).map((content, index) => ({ rowid: index + 1, content }));
  const lane = new EmbeddingLane({
    window: { texts: windowTexts, characters: 1_000_000 },
    windowsInFlight: 2,
    read: async (files, limits) => {
      // As the store answers: files in order until the window is full, the later ones left out.
      let room = limits.texts;
      const answers = [];
      for (const { file, from } of files) {
        if (room <= 0) break;
        const all = rowsOf(file.path);
        const rows = all.filter((row) => row.rowid >= (from ?? 1)).slice(0, room);
        room -= rows.length;
        answers.push(
          chunks.has(file.path) ? { from: from ?? 1, rows, last: (rows.at(-1)?.rowid ?? (from ?? 1) - 1) >= all.length } : undefined,
        );
      }
      return answers;
    },
    embed: async (texts) => texts.map((text) => [new Float32Array([text.length])]),
    write: async (parts) => {
      for (const { file, from, vectors } of parts) {
        const texts = (chunks.get(file.path) ?? []).slice(from - 1, from - 1 + vectors.length);
        written.push({ path: file.path, generation: file.generation, from, texts });
      }
    },
    failed: async () => undefined,
    unexpected: (error) => {
      throw error;
    },
    drained: () => drained(),
  });
  return { lane, written, done };
}

const file = (path: string, generation = 1): LaneFile => ({ path, generation });

test('files are embedded in the order they were added, a window at a time, each chunk once', async () => {
  const chunks = new Map([
    ['a.txt', ['a1', 'a2', 'a3']],
    ['b.txt', ['b1', 'b2', 'b3', 'b4', 'b5']],
    ['c.txt', ['c1']],
  ]);
  const { lane, written, done } = laneOver(chunks);
  for (const path of chunks.keys()) lane.add(file(path));
  await done;
  expect(written.flatMap((part) => part.texts)).toEqual(['a1', 'a2', 'a3', 'b1', 'b2', 'b3', 'b4', 'b5', 'c1']);
  expect(lane.size).toBe(0);
  await lane.stop();
});

test('a file added again replaces its older entry; a forgotten file is not embedded', async () => {
  const chunks = new Map([
    ['a.txt', ['a1']],
    ['b.txt', ['b1']],
    ['c.txt', ['c1']],
  ]);
  const { lane, written, done } = laneOver(chunks);
  // Added while nothing can be read yet: the lane starts reading on the next turn.
  lane.add(file('a.txt', 1));
  lane.add(file('b.txt', 1));
  lane.add(file('c.txt', 1));
  lane.add(file('a.txt', 2));
  lane.forget((waiting) => waiting.path === 'b.txt');
  await done;
  expect(written.map(({ path, generation }) => `${path}@${generation}`)).toEqual(['c.txt@1', 'a.txt@2']);
  await lane.stop();
});

/**
 * The keyword-first gate (src/ingestion/keyword-first.ts) on its own, on a clock the test moves: embedding
 * waits while files are in their keyword phase, unless that phase has not moved for KEYWORD_FIRST_MS, and
 * never once the engine closes. (test/ingestion-two-phase.test.ts sees its effect through the API.)
 */
import { expect, test } from 'bun:test';
import { KEYWORD_FIRST_MS, KeywordFirstGate } from '../src/ingestion/keyword-first.ts';
import { ManualClock } from './fakes/clock.ts';

function gate() {
  const clock = new ManualClock();
  const closing = new AbortController();
  const state = { keywordWork: false, rechecks: 0 };
  const keywordFirst = new KeywordFirstGate({
    inKeywordPhase: () => state.keywordWork,
    recheck: () => void state.rechecks++,
    closing: closing.signal,
    clock,
  });
  return { clock, closing, state, keywordFirst };
}

test('embedding goes on when no file is in its keyword phase', () => {
  const { keywordFirst } = gate();
  keywordFirst.moved();
  expect(keywordFirst.holdsEmbedding()).toBe(false);
});

test('embedding waits while a file is in its keyword phase and the phase is moving', () => {
  const { clock, state, keywordFirst } = gate();
  state.keywordWork = true;
  keywordFirst.moved();
  expect(keywordFirst.holdsEmbedding()).toBe(true);
  clock.advance(KEYWORD_FIRST_MS - 1);
  keywordFirst.moved(); // a file finished: the phase moves on
  clock.advance(KEYWORD_FIRST_MS - 1);
  expect(keywordFirst.holdsEmbedding()).toBe(true);
  state.keywordWork = false; // the last file became searchable
  expect(keywordFirst.holdsEmbedding()).toBe(false);
});

test('a stalled keyword phase (a file parsing for long) no longer holds embedding back, and the scheduler is told', () => {
  const { clock, state, keywordFirst } = gate();
  state.keywordWork = true;
  keywordFirst.moved();
  expect(keywordFirst.holdsEmbedding()).toBe(true);
  expect(keywordFirst.holdsEmbedding()).toBe(true); // one timer, however often it is asked
  clock.advance(KEYWORD_FIRST_MS - 1);
  expect(state.rechecks).toBe(0);
  clock.advance(1);
  expect(state.rechecks).toBe(1);
  expect(keywordFirst.holdsEmbedding()).toBe(false);
  keywordFirst.moved(); // it finished, another starts: keyword first again
  expect(keywordFirst.holdsEmbedding()).toBe(true);
});

test('closing opens the gate and cancels its timer', () => {
  const { clock, closing, state, keywordFirst } = gate();
  state.keywordWork = true;
  keywordFirst.moved();
  expect(keywordFirst.holdsEmbedding()).toBe(true);
  closing.abort();
  expect(keywordFirst.holdsEmbedding()).toBe(false);
  clock.advance(KEYWORD_FIRST_MS * 2);
  expect(state.rechecks).toBe(0);
});

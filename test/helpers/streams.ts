import { expect } from 'bun:test';
import type { StreamEvent } from '../../src/llm/provider.ts';

/** Reads a provider stream to the end: its text, how many deltas carried it, and its one `done` event. */
export async function collect(events: AsyncIterable<StreamEvent>): Promise<{ text: string; deltas: number; done?: StreamEvent }> {
  let text = '';
  let deltas = 0;
  let done: StreamEvent | undefined;
  for await (const event of events) {
    if (event.type === 'delta') {
      text += event.text;
      deltas++;
    } else {
      expect(done).toBeUndefined(); // exactly one closing event
      done = event;
    }
  }
  return { text, deltas, done };
}

/** Parses an SSE body into its events: `event` name (if any) and `data` text. */
export function sseEvents(body: string): { event?: string; data: string }[] {
  return body
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const lines = block.split('\n');
      const event = lines.find((line) => line.startsWith('event: '))?.slice(7);
      const data = lines
        .filter((line) => line.startsWith('data: '))
        .map((line) => line.slice(6))
        .join('\n');
      return event ? { event, data } : { data };
    });
}

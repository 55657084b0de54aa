import { describe, expect, test } from 'bun:test';
import { Channel } from '../src/util/channel.ts';
import { nextTurn } from '../src/util/next-turn.ts';

async function collect<T>(channel: Channel<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of channel) items.push(item);
  return items;
}

/** Lets the iteration run until it waits for an item. */
const turn = nextTurn;

describe('Channel', () => {
  test('items pushed before and while iterating come out in order, until end()', async () => {
    const channel = new Channel<number>();
    channel.push(1);
    const collected = collect(channel);
    channel.push(2);
    await turn();
    channel.push(3);
    channel.end();
    expect(await collected).toEqual([1, 2, 3]);
  });

  test('fail() throws from the iteration once the items already pushed are taken', async () => {
    const channel = new Channel<string>();
    const seen: string[] = [];
    channel.push('a');
    channel.push('b');
    channel.fail(new Error('broken'));
    const iterate = async () => {
      for await (const item of channel) seen.push(item);
    };
    await expect(iterate()).rejects.toThrow('broken');
    expect(seen).toEqual(['a', 'b']);
  });

  test('a waiting iteration wakes on end() with nothing pushed', async () => {
    const channel = new Channel<string>();
    const collected = collect(channel);
    await turn();
    channel.end();
    expect(await collected).toEqual([]);
  });
});

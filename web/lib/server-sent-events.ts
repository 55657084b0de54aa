/** Reading a streamed answer (`stream: true`) in the console: the Server-Sent Events of a fetch response. */

/** Server-Sent Events of a fetch response: `{event, data}` per block (API-CONTRACT 6). */
export async function* events(response: Response): AsyncGenerator<{ event: string | undefined; data: string }> {
  if (!response.body) return;
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value.replace(/\r\n/g, '\n');
    for (let at = buffer.indexOf('\n\n'); at >= 0; at = buffer.indexOf('\n\n')) {
      const parsed = eventOf(buffer.slice(0, at));
      buffer = buffer.slice(at + 2);
      if (parsed) yield parsed;
    }
  }
}

/** One block of Server-Sent Events: its event name and its data lines joined; undefined when it has no data. */
function eventOf(block: string): { event: string | undefined; data: string } | undefined {
  let event: string | undefined;
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line.startsWith('event:')) event = line.slice(6).trim();
    else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
  }
  return data.length > 0 ? { event, data: data.join('\n') } : undefined;
}

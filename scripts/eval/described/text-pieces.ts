/** A chunk's text as pieces of at most `window` characters, cut between words (the whole-chunk vector experiments). */
export function textPieces(text: string, window: number): string[] {
  const out: string[] = [];
  let current = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (current && current.length + 1 + word.length > window) {
      out.push(current);
      current = word;
    } else current = current ? `${current} ${word}` : word;
  }
  if (current) out.push(current);
  return out.length > 0 ? out : [''];
}

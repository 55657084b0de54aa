import type { ChatMessage } from '../llm/provider.ts';
import type { References } from './ports.ts';

/** A string query is one user message (specification, Query request). */
export function toMessages(messages: string | ChatMessage[]): ChatMessage[] {
  return typeof messages === 'string' ? [{ role: 'user', content: messages }] : messages;
}

/** What the dataset is searched with: the string query, or the last user message (API-CONTRACT 6). */
export function searchText(messages: ChatMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i];
    if (message?.role === 'user') return message.content;
  }
  return messages[messages.length - 1]?.content ?? '';
}

/**
 * The caller's messages with the references inserted first as one system message, when there are any
 * (specification, Endpoint management rule 7d; the block format is API-CONTRACT 6).
 */
export function withReferences(messages: ChatMessage[], references: References | undefined): ChatMessage[] {
  if (!references || references.documents.length === 0) return messages;
  const blocks = references.documents.map((document, index) => {
    const source = typeof document.metadata.source === 'string' ? document.metadata.source : document.document_id;
    return `[${index + 1}] (${source}) ${document.content}`;
  });
  return [{ role: 'system', content: `Use the following context to answer:\n\n${blocks.join('\n\n')}` }, ...messages];
}

/**
 * Tokens added to the estimate of a prompt for the cost ceiling, so that it errs on the generous side:
 * the chat template wraps the messages in role markers the character count does not see.
 */
export const PROMPT_TOKEN_MARGIN = 16;

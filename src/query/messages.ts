import type { ChatMessage } from '../llm/provider.ts';

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
 * The caller's messages with the context of the references (answer-context.ts) inserted first as one system
 * message, when there is one (specification, Endpoint management rule 7d; its format is API-CONTRACT 6).
 */
export function withContext(messages: ChatMessage[], context: string | undefined): ChatMessage[] {
  return context ? [{ role: 'system', content: context }, ...messages] : messages;
}

/**
 * Tokens added to the estimate of a prompt for the cost ceiling, so that it errs on the generous side:
 * the chat template wraps the messages in role markers the character count does not see.
 */
export const PROMPT_TOKEN_MARGIN = 16;

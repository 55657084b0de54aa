/**
 * A chat request of the provider interface in node-llama-cpp's terms, and its answer back:
 * - messages are stateless per request: the caller's whole history is rendered every time (LlamaChat
 *   reuses the evaluated prefix it shares with the previous request); the chat template comes from the
 *   GGUF (LlamaChat's "auto" wrapper reads tokenizer.chat_template);
 * - OpenAI's penalties map to llama.cpp's additive presence/frequency penalties; with both at 0 no
 *   repetition penalty is applied (node-llama-cpp would otherwise apply its own 1.1 by default);
 * - node-llama-cpp's stop reasons become OpenAI's finish reasons.
 */
import type { ChatHistoryItem, LLamaChatGenerateResponseOptions, LlamaGrammar } from 'node-llama-cpp';
import type { ChatMessage, ChatOptions, FinishReason } from '../provider.ts';

export function chatHistory(systemPrompt: string | undefined, messages: ChatMessage[]): ChatHistoryItem[] {
  const history: ChatHistoryItem[] = [];
  if (systemPrompt) history.push({ type: 'system', text: systemPrompt });
  for (const message of messages) {
    if (message.role === 'system') history.push({ type: 'system', text: message.content });
    else if (message.role === 'user') history.push({ type: 'user', text: message.content });
    // A last assistant message is continued, as llama.cpp's own server does with a prefill.
    else history.push({ type: 'model', response: [message.content] });
  }
  return history;
}

export function generationOptions(
  options: ChatOptions,
  grammar: LlamaGrammar | undefined,
  signal: AbortSignal | undefined,
  onResponseChunk: NonNullable<LLamaChatGenerateResponseOptions['onResponseChunk']>,
): LLamaChatGenerateResponseOptions {
  const stops = options.stop_sequences.filter((sequence) => sequence !== '');
  return {
    maxTokens: options.max_tokens,
    temperature: options.temperature,
    ...(options.top_p !== undefined ? { topP: options.top_p } : {}),
    ...(options.seed !== undefined ? { seed: options.seed } : {}),
    ...(stops.length > 0 ? { customStopTriggers: stops } : {}),
    ...(grammar ? { grammar } : {}),
    repeatPenalty:
      options.presence_penalty === 0 && options.frequency_penalty === 0
        ? false
        : { penalty: 1, presencePenalty: options.presence_penalty, frequencyPenalty: options.frequency_penalty },
    ...(signal ? { signal } : {}),
    // An abort rejects (the provider then throws the caller's reason) instead of returning a partial answer.
    stopOnAbortSignal: false,
    onResponseChunk,
  };
}

const FINISH_REASONS: Record<string, FinishReason> = {
  eogToken: 'stop',
  customStopTrigger: 'stop',
  stopGenerationTrigger: 'stop',
  maxTokens: 'length',
  functionCalls: 'tool_calls',
  abort: 'stop',
};

export function finishReason(stopReason: string): FinishReason {
  return FINISH_REASONS[stopReason] ?? 'stop';
}

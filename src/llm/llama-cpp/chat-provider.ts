/**
 * dtype `llama_cpp`: the chat provider of local GGUF models, run through the shared LocalModelRegistry
 * (model-registry.ts). Usage counts tokens with the model's tokenizer: the prompt as the template
 * renders it, and every generated token (thought segments included, as they were paid for in time).
 */
import { basename, resolve } from 'node:path';
import { errorMessage } from '../../domain/errors.ts';
import { abortReason } from '../../util/abort.ts';
import { Channel } from '../../util/channel.ts';
import { ggufFileProblem, type LlamaCppConfiguration } from '../model-config.ts';
import {
  type ChatMessage,
  type ChatOptions,
  type ChatProvider,
  type ChatSummary,
  doneEvent,
  ModelError,
  newCompletionId,
  type ProviderHealth,
  type StreamEvent,
  sumUsage,
} from '../provider.ts';
import { grammarFor } from './grammar.ts';
import { chatHistory, finishReason, generationOptions } from './mapping.ts';
import type { LocalModelRegistry } from './model-registry.ts';

export class LlamaCppChatProvider implements ChatProvider {
  private readonly name: string;
  private readonly modelPath: string;
  private readonly systemPrompt: string | undefined;

  /** `config` with its defaults applied (model-config.ts); an empty prompt is none. */
  constructor(
    private readonly config: LlamaCppConfiguration,
    private readonly registry: LocalModelRegistry,
  ) {
    this.modelPath = resolve(config.model_path);
    this.systemPrompt = config.system_prompt || undefined;
    // The file name, not the path: messages reach public callers, the folder layout is nobody's business.
    this.name = basename(this.modelPath);
  }

  chat(messages: ChatMessage[], options: ChatOptions, signal?: AbortSignal): Promise<ChatSummary> {
    return this.generate(messages, options, signal);
  }

  async *stream(messages: ChatMessage[], options: ChatOptions, signal?: AbortSignal): AsyncGenerator<StreamEvent> {
    signal?.throwIfAborted();
    // Our own controller too, so that a consumer leaving the loop stops generation.
    const stop = new AbortController();
    const combined = signal ? AbortSignal.any([signal, stop.signal]) : stop.signal;
    const channel = new Channel<StreamEvent>();
    const finished = this.generate(messages, options, combined, (text) => channel.push({ type: 'delta', text })).then(
      (summary) => {
        channel.push(doneEvent(summary));
        channel.end();
      },
      (error: unknown) => channel.fail(signal?.aborted ? abortReason(signal) : error),
    );
    try {
      yield* channel;
    } finally {
      stop.abort();
      // The slot is released only once generation has really stopped.
      await finished;
    }
  }

  async health(signal?: AbortSignal): Promise<ProviderHealth> {
    const problem = ggufFileProblem(this.modelPath);
    if (problem) return { healthy: false, message: `Model '${this.name}': ${problem}` };
    if (this.registry.isLoaded(this.modelPath)) {
      return { healthy: true, message: `Model '${this.name}' is loaded` };
    }
    // Reading the header checks the file without loading gigabytes of weights for a health check.
    try {
      const module = await this.registry.module();
      const info = await module.readGgufFileInfo(this.modelPath, {
        sourceType: 'filesystem',
        readTensorInfo: false,
        logWarnings: false,
        ...(signal ? { signal } : {}),
      });
      const architecture = info.metadata.general.architecture;
      return { healthy: true, message: `Model '${this.name}' is ready (${architecture}); it loads on first use` };
    } catch (error) {
      return { healthy: false, message: `Model '${this.name}' cannot be read: ${errorMessage(error)}` };
    }
  }

  private async generate(
    messages: ChatMessage[],
    options: ChatOptions,
    signal: AbortSignal | undefined,
    onText?: (text: string) => void,
  ): Promise<ChatSummary> {
    signal?.throwIfAborted();
    const started = performance.now();
    try {
      return await this.registry.run(this.config, signal, async ({ llama, model, context, chat }) => {
        const history = chatHistory(this.systemPrompt, messages);
        const promptTokens = chat.chatWrapper
          .generateContextState({ chatHistory: [...history, { type: 'model', response: [] }] })
          .contextText.tokenize(model.tokenizer).length;
        let completionTokens = 0;
        const grammar = await grammarFor(llama, options.response_format, this.name);
        const generationStarted = performance.now();
        const result = await chat.generateResponse(
          history,
          generationOptions(options, grammar, signal, (chunk) => {
            completionTokens += chunk.tokens.length;
            // Only the answer is streamed; thought segments are not part of it.
            if (chunk.type === undefined && chunk.text !== '') onText?.(chunk.text);
          }),
        );
        const generationMs = performance.now() - generationStarted;
        return {
          id: newCompletionId(),
          model: this.name,
          message: { role: 'assistant', content: result.response, tokens: completionTokens },
          finish_reason: finishReason(result.metadata.stopReason),
          usage: sumUsage(promptTokens, completionTokens),
          provider_info: {
            provider: 'llama_cpp',
            response_time_ms: Math.round(performance.now() - started),
            generation_ms: Math.round(generationMs),
            tokens_per_second: generationMs > 0 ? Math.round((completionTokens / generationMs) * 1000 * 10) / 10 : 0,
            context_size: context.contextSize,
            threads: this.config.threads,
            chat_template: chat.chatWrapper.wrapperName,
          },
        } satisfies ChatSummary;
      });
    } catch (error) {
      if (signal?.aborted) throw abortReason(signal);
      if (error instanceof ModelError) throw error;
      throw new ModelError(`Model '${this.name}' failed: ${errorMessage(error)}`, { cause: error });
    }
  }
}

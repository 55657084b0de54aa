/**
 * Tokens per second of the llama_cpp provider against node-llama-cpp called directly, on the same
 * model, prompt and settings: the ratio is the provider's overhead (registry, queue, token counting,
 * streaming channel).
 *
 * Usage: bun scripts/bench/generate.ts [model.gguf] [--tokens N] [--runs N] [--threads N]
 * Without a model it writes the tiny random-weight test model to a temporary folder (its figures show
 * the per-token overhead at its worst, since the model itself costs almost nothing).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ChatHistoryItem, getLlama, LlamaChat, LlamaLogLevel } from 'node-llama-cpp';
import { LlamaCppChatProvider } from '../../src/llm/llama-cpp/chat-provider.ts';
import { DEFAULT_MAX_CONTEXT_SIZE, LocalModelRegistry } from '../../src/llm/llama-cpp/model-registry.ts';
import { withModelDefaults } from '../../src/llm/model-config.ts';
import type { ChatOptions } from '../../src/llm/provider.ts';
import { writeTinyGguf } from '../fixtures/make-tiny-gguf.ts';

function flag(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  const value = at >= 0 ? Number(process.argv[at + 1]) : Number.NaN;
  return Number.isInteger(value) && value > 0 ? value : fallback;
}

const tokens = flag('tokens', 256);
const runs = flag('runs', 9);
const threads = flag('threads', availableParallelism());
const given = process.argv.slice(2).find((arg, i, all) => !arg.startsWith('--') && !all[i - 1]?.startsWith('--'));
const scratch = given ? undefined : mkdtempSync(join(tmpdir(), 'knode-bench-'));
const modelPath = given ?? writeTinyGguf(join(scratch as string, 'tiny.gguf'));
const prompt = 'Write a short story about a lighthouse keeper who finds a message in a bottle.';

interface Run {
  tokens: number;
  ms: number;
}

type Runner = () => Promise<Run>;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

/**
 * Interleaves the runners run by run, so that drift of the machine (other load, CPU clocks) hits all of
 * them alike; the first round warms up (loading, first evaluation of the prompt) and is not counted.
 */
async function compare(runners: Record<string, Runner>): Promise<Record<string, number>> {
  const rates: Record<string, number[]> = {};
  for (let round = 0; round <= runs; round++) {
    for (const [label, run] of Object.entries(runners)) {
      const result = await run();
      if (round > 0) {
        rates[label] ??= [];
        rates[label].push((result.tokens / result.ms) * 1000);
      }
    }
  }
  const medians: Record<string, number> = {};
  for (const [label, values] of Object.entries(rates)) {
    medians[label] = median(values);
    const spread = `${Math.min(...values).toFixed(0)}-${Math.max(...values).toFixed(0)}`;
    console.log(`${label.padEnd(26)} ${median(values).toFixed(1).padStart(8)} tokens/s  (median of ${runs}, range ${spread})`);
  }
  return medians;
}

async function directRunner(): Promise<{ run: Runner; dispose: () => Promise<void> }> {
  const llama = await getLlama({ gpu: false, build: 'never', progressLogs: false, logLevel: LlamaLogLevel.error, maxThreads: 0 });
  const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
  const context = await model.createContext({ contextSize: { max: DEFAULT_MAX_CONTEXT_SIZE }, threads, sequences: 1 });
  const chat = new LlamaChat({ contextSequence: context.getSequence() });
  const history: ChatHistoryItem[] = [{ type: 'user', text: prompt }];
  return {
    run: async () => {
      let count = 0;
      const started = performance.now();
      await chat.generateResponse(history, {
        maxTokens: tokens,
        temperature: 0,
        repeatPenalty: false,
        onResponseChunk: (chunk) => (count += chunk.tokens.length),
      });
      return { tokens: count, ms: performance.now() - started };
    },
    dispose: () => llama.dispose(),
  };
}

function providerRunners(registry: LocalModelRegistry): { chat: Runner; stream: Runner } {
  const provider = new LlamaCppChatProvider(withModelDefaults('llama_cpp', { model_path: modelPath, threads }), registry);
  const options: ChatOptions = { max_tokens: tokens, temperature: 0, stop_sequences: [], presence_penalty: 0, frequency_penalty: 0 };
  const messages = [{ role: 'user' as const, content: prompt }];
  return {
    chat: async () => {
      const started = performance.now();
      const summary = await provider.chat(messages, options);
      return { tokens: summary.usage.completion_tokens, ms: performance.now() - started };
    },
    stream: async () => {
      const started = performance.now();
      let count = 0;
      for await (const event of provider.stream(messages, options)) {
        if (event.type === 'done') count = event.usage.completion_tokens;
      }
      return { tokens: count, ms: performance.now() - started };
    },
  };
}

console.log(`model ${modelPath}${given ? '' : ' (tiny random-weight test model)'}`);
console.log(`${tokens} tokens per answer, temperature 0, ${threads} threads, ${availableParallelism()} cores, Bun ${Bun.version}`);
const direct = await directRunner();
const registry = new LocalModelRegistry();
const viaProvider = providerRunners(registry);
try {
  const rates = await compare({
    'node-llama-cpp directly': direct.run,
    'provider chat()': viaProvider.chat,
    'provider stream()': viaProvider.stream,
  });
  const base = rates['node-llama-cpp directly'] ?? 0;
  const ratio = (label: string) => ((rates[label] ?? 0) / base).toFixed(2);
  console.log(`provider / direct: chat ${ratio('provider chat()')}, stream ${ratio('provider stream()')}`);
} finally {
  await registry.dispose();
  await direct.dispose();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
}

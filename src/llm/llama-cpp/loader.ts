/**
 * node-llama-cpp, imported on first use (`await import`) so that the server starts without it: the
 * compiled binary imports it from the `vendor/` folder beside itself (runtime/vendor.ts), and tests may
 * pass their own loader. Its native part starts once per process, CPU only.
 */
import type { Llama } from 'node-llama-cpp';
import { errorMessage } from '../../domain/errors.ts';
import { importNodeLlamaCpp, type NodeLlamaCppModule } from '../../runtime/vendor.ts';
import { ModelError } from '../provider.ts';

export type { NodeLlamaCppModule };

export interface StartedLlama {
  module: NodeLlamaCppModule;
  llama: Llama;
}

export class LlamaLoader {
  private started: Promise<StartedLlama> | undefined;

  constructor(private readonly load: () => Promise<NodeLlamaCppModule> = importNodeLlamaCpp) {}

  /** node-llama-cpp itself, without starting its native part (enough to read GGUF metadata). */
  module(): Promise<NodeLlamaCppModule> {
    return this.load();
  }

  /** The module with its native part started; a failure is a ModelError, and the next call tries again. */
  start(): Promise<StartedLlama> {
    this.started ??= (async () => {
      const module = await this.load();
      // Prebuilt CPU binaries only: never compile, never download. maxThreads 0 lifts node-llama-cpp's
      // cap so each context gets exactly the threads it asks for.
      const llama = await module.getLlama({
        gpu: false,
        build: 'never',
        usePrebuiltBinaries: true,
        skipDownload: true,
        progressLogs: false,
        logLevel: module.LlamaLogLevel.error,
        maxThreads: 0,
      });
      return { module, llama };
    })().catch((error: unknown) => {
      this.started = undefined;
      throw new ModelError(`Local models are unavailable: node-llama-cpp could not start (${errorMessage(error)})`, { cause: error });
    });
    return this.started;
  }

  /** Stops the native part if it started; the models must be disposed of first. */
  async dispose(): Promise<void> {
    const started = this.started;
    this.started = undefined;
    if (started) await started.then(({ llama }) => llama.dispose()).catch(() => undefined);
  }
}

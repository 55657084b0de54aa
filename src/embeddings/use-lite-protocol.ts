/** Messages between UseLiteEmbedder and its worker thread. */
export interface UseLiteRequest {
  readonly id: number;
  readonly texts: string[];
}

export type UseLiteResponse = { readonly id: number; readonly vectors: Float32Array[] } | { readonly id: number; readonly error: string };

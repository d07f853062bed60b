/**
 * The local model's tokenizer without TensorFlow.js: the SentencePiece (unigram) segmentation of
 * `@energetic-ai/embeddings` (itself from `@tensorflow-models/universal-sentence-encoder`, Apache-2.0,
 * Copyright 2019 Google LLC), which that package does not export apart from its model (importing it
 * loads TensorFlow.js). The same token ids, quirks included (an unknown symbol's backtracking step,
 * `best === 0` as "not reached yet"); `test/unit/localModel.test.ts` holds the two together.
 */

/** `[piece, score]`, by token id: the model package's `vocab.json`. */
export type Vocabulary = ReadonlyArray<readonly [string, number]>

/** The first ids are control symbols, never matched in text. */
const RESERVED_SYMBOLS = 6
const SEPARATOR = "\u2581"

interface Piece {
  /** Length in symbols (code points). */
  readonly length: number
  readonly score: number
  readonly index: number
}

interface TrieNode {
  readonly children: Map<string, TrieNode>
  piece: Piece | undefined
}

const UNKNOWN: Piece = { length: 1, score: 0, index: 0 }

export class SentencePieceTokenizer {
  private readonly root: TrieNode = { children: new Map(), piece: undefined }
  private readonly vocabulary: Vocabulary

  constructor(vocabulary: Vocabulary) {
    this.vocabulary = vocabulary
    for (let index = RESERVED_SYMBOLS; index < vocabulary.length; index++) {
      const [word, score] = vocabulary[index]!
      const symbols = Array.from(word)
      let node = this.root
      for (const symbol of symbols) {
        let child = node.children.get(symbol)
        if (child === undefined) {
          child = { children: new Map(), piece: undefined }
          node.children.set(symbol, child)
        }
        node = child
      }
      if (symbols.length > 0) node.piece = { length: symbols.length, score, index }
    }
  }

  /** The pieces that start `symbols` at `start` (the unknown symbol's when none does). */
  private prefixes(symbols: ReadonlyArray<string>, start: number): ReadonlyArray<Piece> {
    const found: Array<Piece> = []
    let node = this.root.children.get(symbols[start]!)
    for (let i = start; i < symbols.length && node !== undefined; i++) {
      if (node.piece !== undefined) found.push(node.piece)
      node = i + 1 < symbols.length ? node.children.get(symbols[i + 1]!) : undefined
    }
    return found.length > 0 ? found : [UNKNOWN]
  }

  encode(text: string): Array<number> {
    const normalized = text.normalize("NFKC")
    const input = normalized.length > 0 ? SEPARATOR + normalized.replace(/ /g, SEPARATOR) : normalized
    const symbols = Array.from(input)
    // The pieces ending at each position, in the order of their start.
    const ending: Array<Array<Piece>> = Array.from({ length: symbols.length + 1 }, () => [])
    for (let i = 0; i < symbols.length; i++) {
      for (const piece of this.prefixes(symbols, i)) ending[i + piece.length]!.push(piece)
    }
    const best = new Array<number>(symbols.length + 1).fill(0)
    const words = new Array<number>(symbols.length + 1).fill(0)
    for (let end = 0; end <= symbols.length; end++) {
      for (const piece of ending[end]!) {
        const score = piece.score + best[end - piece.length]!
        if (best[end] === 0 || score >= best[end]!) {
          best[end] = score
          words[end] = piece.index
        }
      }
    }
    const ids: Array<number> = []
    for (let at = words.length - 1; at > 0; at -= this.vocabulary[words[at]!]![0].length) ids.push(words[at]!)
    // Runs of unknown symbols become one.
    const merged: Array<number> = []
    let previousUnknown = false
    for (const id of ids) {
      if (!(previousUnknown && id === 0)) merged.push(id)
      previousUnknown = id === 0
    }
    return merged.reverse()
  }
}

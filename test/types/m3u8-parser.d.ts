/** The part of video.js's M3U parser the tests use (the package ships no types). */
declare module 'm3u8-parser' {
  export interface Segment {
    readonly uri: string;
    readonly duration: number;
    readonly title?: string;
  }
  export class Parser {
    push(chunk: string): void;
    end(): void;
    readonly manifest: { readonly segments: Segment[] };
  }
}

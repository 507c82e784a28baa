export { FileAdapter, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, fileNameOf, type FileAdapterOptions } from './file-adapter.js';
export { writeNdjson, type WriteNdjsonOptions } from './ndjson-writer.js';
export { encodeFileToken, decodeFileToken, type FilePosition } from './page-token.js';

/**
 * The operator's console room: `/console` on the public server, pages over the control API (src/api) signed in with
 * its keys. It reads and acts only through the API's app, in process.
 */
export { mountConsole, type ConsoleDeps } from './console.js';

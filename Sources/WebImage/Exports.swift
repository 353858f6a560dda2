// `import WebImage` brings the image types its API returns (WebImageCoders). The HTTP layer is
// not re-exported: its names (`HTTPSession`, `SecurityPolicy`) come with `import WebImageHTTP`,
// so an app that also imports NIOHTTP1 or Hummingbird meets no ambiguous names.
@_exported import WebImageCoders

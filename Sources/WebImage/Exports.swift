// `import WebImage` gives the whole pipeline: the image types its API returns (WebImageCoders)
// and the HTTP types its configuration takes (WebImageHTTP).
@_exported import WebImageCoders
@_exported import WebImageHTTP

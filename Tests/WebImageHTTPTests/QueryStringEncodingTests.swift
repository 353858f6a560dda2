import Testing
import WebImageHTTP

@Suite("AFNetworking query-string rules")
struct QueryStringEncodingTests {
    @Test("Nesting, arrays, nulls, booleans, sorting and escaping")
    func rules() {
        #expect(QueryStringEncoding.queryString(from: ["b": 1, "a": "x"]) == "a=x&b=1")
        #expect(QueryStringEncoding.queryString(from: ["a": ["b": ["c": "d"]]]) == "a%5Bb%5D%5Bc%5D=d")
        #expect(QueryStringEncoding.queryString(from: ["ids": [1, 2, 3]]) == "ids%5B%5D=1&ids%5B%5D=2&ids%5B%5D=3")
        #expect(QueryStringEncoding.queryString(from: ["flag": true, "off": false]) == "flag=1&off=0")
        #expect(QueryStringEncoding.queryString(from: ["empty": nil]) == "empty")
        #expect(QueryStringEncoding.queryString(from: ["pi": 3.5]) == "pi=3.5")
        // ? and / stay; general and sub-delimiters are escaped; unicode is UTF-8 escaped.
        #expect(QueryStringEncoding.escape("a/b?c") == "a/b?c")
        #expect(QueryStringEncoding.escape(":#[]@!$&'()*+,;=") == "%3A%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D")
        #expect(QueryStringEncoding.escape("é 😀") == "%C3%A9%20%F0%9F%98%80")
    }
}

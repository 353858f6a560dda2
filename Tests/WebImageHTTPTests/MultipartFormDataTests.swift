import Foundation
import Testing
import WebImageHTTP
import WebImageOrigin
import WebImageTestSupport

@Suite("Multipart form data", .timeLimit(.minutes(1)))
struct MultipartFormDataTests {
    @Test("Fields, data and files are read back by the server, with the declared length")
    func roundTrip() async throws {
        let context = try await HTTPTestContext.make()
        let directory = try TemporaryDirectory()
        let file = directory.file("photo.png")
        let fileBytes = Data((0..<70_000).map { UInt8(truncatingIfNeeded: $0) })  // contains CR, LF and dashes
        try fileBytes.write(to: file)
        var form = MultipartFormData()
        form.append("Ada Lovelace", name: "author")
        form.append("naïve \"quoted\"", name: "title")
        form.append(Data("a,b\n1,2".utf8), name: "table", fileName: "table.csv", mimeType: "text/csv")
        try form.append(fileAt: file, name: "photo")
        #expect(form.encoded().count == form.contentLength)

        let (_, reply) = try await context.session.post(
            context.origin.url("/multipart").absoluteString,
            multipart: form,
            serializer: .json
        )
        #expect(reply["error"] == nil)
        #expect(reply["boundary"] == .string(form.boundary))
        #expect(reply["declaredLength"] == .number(Double(form.contentLength)))
        #expect(reply["receivedLength"] == .number(Double(form.contentLength)))
        #expect(
            reply["parts"]?[0]?["name"] == .string("author") && reply["parts"]?[0]?["text"] == .string("Ada Lovelace")
        )
        #expect(reply["parts"]?[1]?["text"] == .string("naïve \"quoted\""))
        #expect(
            reply["parts"]?[2]?["filename"] == .string("table.csv")
                && reply["parts"]?[2]?["contentType"] == .string("text/csv")
        )
        #expect(
            reply["parts"]?[3]?["filename"] == .string("photo.png")
                && reply["parts"]?[3]?["contentType"] == .string("image/png")
        )
        #expect(reply["parts"]?[3]?["size"] == .number(70_000))
        directory.remove()
        await context.finish()
    }

    @Test("A missing file is a fileError naming it")
    func missingFile() {
        var form = MultipartFormData()
        #expect {
            try form.append(fileAt: URL(fileURLWithPath: "/nonexistent/x.png"), name: "x")
        } throws: { error in
            (error as? HTTPSessionError)?.code == .fileError
                && (error as? HTTPSessionError)?.message.contains("/nonexistent/x.png") == true
        }
    }
}

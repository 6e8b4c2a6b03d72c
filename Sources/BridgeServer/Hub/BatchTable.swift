import BridgeRPC

/// The JSON-RPC batches whose answers are being collected (JSON-RPC 2.0 §6: a batch is answered with one array, once
/// every request in it is answered), under ids the hub gives them (counting from 1, never given twice).
///
/// A value: ``add(_:to:)`` says when a batch is complete, the hub sends it. `HubBatchTableTests` tests it without a
/// bridge.
struct BatchTable {
    /// What became of an answer given to ``add(_:to:)``.
    enum Delivery {
        /// No such batch (its connection went away): the answer goes on its own, if anywhere.
        case notInBatch
        /// Kept: the batch waits for more answers.
        case kept
        /// The batch's last answer: here are the batch's answers, in the order they came, for its connection.
        case complete(BatchRecord)
    }

    private var batches: [UInt64: BatchRecord] = [:]
    private var nextID: UInt64 = 1

    /// How many batches wait for answers.
    var count: Int { batches.count }

    /// Opens a batch of `connection` that will get `expected` answers (its requests and its invalid elements); returns
    /// its id.
    mutating func open(for connection: ConnectionID, expecting expected: Int) -> UInt64 {
        let id = nextID
        nextID += 1
        batches[id] = BatchRecord(connection: connection, remaining: expected)
        return id
    }

    /// Adds an answer to batch `id`.
    mutating func add(_ answer: JSONRPCMessage, to id: UInt64) -> Delivery {
        // Changed in place (through the index): copying the record out would copy its answers each time, and a batch of
        // n requests would cost n² copies.
        guard let index = batches.index(forKey: id) else { return .notInBatch }
        batches.values[index].responses.append(answer)
        batches.values[index].remaining -= 1
        guard batches.values[index].remaining <= 0 else { return .kept }
        return .complete(batches.remove(at: index).value)
    }

    /// Forgets the batches of `connection` (gone: nobody to send them to).
    mutating func drop(connection: ConnectionID) {
        batches = batches.filter { $0.value.connection != connection }
    }
}

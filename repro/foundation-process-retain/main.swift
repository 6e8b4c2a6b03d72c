// Reproduction (issue 15): swift-corelibs-foundation's Process with a terminationHandler is never freed unless someone
// calls waitUntilExit(). Swift 6.3.1, Linux x86_64. Foundation only; not part of oa-bridge's products.
//
//   swiftc -O main.swift -o proc && ./proc handler && ./proc wait && ./proc handler-then-wait
//
// Each mode launches `/bin/sh -c 'kill -9 $$'` 200 times, one after the other, and counts the Process objects alive
// (a subclass counts init/deinit). Printed here:
//   handler: 200 processes launched and ended; Process objects alive: 200            <- the leak
//   handler-nil: ... alive: 200          (the handler sets terminationHandler = nil: no help)
//   handler+wait: ... alive: 0           (handler, and waitUntilExit() right after run())
//   wait: ... alive: 0                   (no handler, waitUntilExit())
//   handler-then-wait: ... alive: 0      (handler, then waitUntilExit() once it ran)
//   wait-in-handler: ... alive: 0        (waitUntilExit() inside the handler; tried in oa-bridge: inconclusive,
//                                         see notes/upstream-swift-corelibs-foundation-process-retained.md)
// The `@unchecked Sendable` is the test subclass of Foundation's own `@unchecked Sendable` Process.

import Foundation
import Synchronization
let live = Atomic<Int>(0)
final class Counted: Process, @unchecked Sendable {
    override init() { super.init(); live.add(1, ordering: .relaxed) }
    deinit { live.subtract(1, ordering: .relaxed) }
}
let mode = CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "handler"
let n = 200
for _ in 0..<n {
    let done = DispatchSemaphore(value: 0)
    do {
        let p = Counted()
        p.executableURL = URL(fileURLWithPath: "/bin/sh")
        p.arguments = ["-c", "kill -9 $$"]
        if mode == "handler" || mode == "handler+wait" || mode == "handler-then-wait" { p.terminationHandler = { _ in done.signal() } }
        if mode == "wait-in-handler" { p.terminationHandler = { finished in finished.waitUntilExit(); done.signal() } }
        if mode == "handler-nil" { p.terminationHandler = { finished in finished.terminationHandler = nil; done.signal() } }
        try p.run()
        if mode == "handler" || mode == "handler-nil" || mode == "wait-in-handler" { done.wait() } else if mode == "handler-then-wait" { done.wait(); p.waitUntilExit() } else { p.waitUntilExit() }
    } catch { print(error); exit(2) }
}
Thread.sleep(forTimeInterval: 1)
print("\(mode): \(n) processes launched and ended; Process objects alive: \(live.load(ordering: .relaxed))")

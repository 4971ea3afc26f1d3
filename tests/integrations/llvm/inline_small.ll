; FileCheck test of the plugin's ML inliner (test_filecheck.py runs it):
; one call site, inlined or not as the policy says.
;   never.onnx inlines nothing, callee_bb_le_3.onnx only @small,
;   always.onnx also the 5-block callee (check prefixes below).
define internal i32 @small(i32 %x) {
  %y = add i32 %x, 1
  ret i32 %y
}

define internal i32 @five_blocks(i32 %x) {
entry:
  %c = icmp sgt i32 %x, 0
  br i1 %c, label %a, label %b
a:
  %p = mul i32 %x, 3
  br label %d
b:
  %q = sub i32 0, %x
  br label %c2
c2:
  %r = add i32 %q, 7
  br label %d
d:
  %v = phi i32 [ %p, %a ], [ %r, %c2 ]
  ret i32 %v
}

define i32 @caller(i32 %x) {
  %a = call i32 @small(i32 %x)
  %b = call i32 @five_blocks(i32 %a)
  %c = call i32 @five_blocks(i32 %b)
  ret i32 %c
}

; NEVER-LABEL: define i32 @caller(
; NEVER: call i32 @small(
; NEVER: call i32 @five_blocks(
; NEVER: call i32 @five_blocks(
; BB3-LABEL: define i32 @caller(
; BB3-NOT: call i32 @small(
; BB3: call i32 @five_blocks(
; BB3: call i32 @five_blocks(
; ALWAYS-LABEL: define i32 @caller(
; ALWAYS-NOT: call
; ALWAYS: ret i32

## Answers shown while they are written.

# The line under an answer while the model is still writing it.
draft-writing = writing…
# The line under an answer whose run was stopped before it was done.
draft-stopped = stopped before it was done
# /settings streaming, on this server.
settings-streaming-on = Answers here appear while they are written: posted early, then edited about once a second.
settings-streaming-off = Answers here are posted whole, once they are done.

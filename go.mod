module turnwatch.dev/turnwatch

go 1.26.0

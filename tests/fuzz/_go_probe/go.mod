module denolet.test/goprobe

go 1.26
